// Package serve runs the MCP server over a transport: stdio, or streamable HTTP at /mcp with
// the spec's /healthz and /readyz probes and graceful shutdown.
package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/logging"
)

// Prober checks that the Kubernetes API answers (kube.Client.Probe).
type Prober interface {
	Probe(ctx context.Context, namespace string) error
}

// Health serves the probes. Ready flips once start-up has finished.
type Health struct {
	Prober    Prober
	Namespace string
	Log       zerolog.Logger
	ready     atomic.Bool
	draining  atomic.Bool
}

// MarkReady ends the "starting" phase.
func (h *Health) MarkReady() { h.ready.Store(true) }

// MarkDraining starts the shutdown: readiness fails from now on, so the Service routes new
// requests to other replicas while this one finishes its own.
func (h *Health) MarkDraining() { h.draining.Store(true) }

// Healthz is liveness: the process routes HTTP. It never calls the Kubernetes API, so a
// control-plane blip does not restart every replica.
func (h *Health) Healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok"))
}

// Readyz is readiness: it lists claims in the probe namespace. The reason is generic because
// the endpoint is unauthenticated; the error itself goes to the log.
func (h *Health) Readyz(w http.ResponseWriter, r *http.Request) {
	if h.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": "shutting down"})
		return
	}
	if !h.ready.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": "starting"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := h.Prober.Probe(ctx, h.Namespace); err != nil {
		// Clients hear it too (once a minute at most): their calls fail the same way.
		logging.ForClients(h.Log.Warn()).Err(err).Str("namespace", h.Namespace).Msg("readiness probe: kubernetes API unavailable")
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": "kubernetes API unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ready": true})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
