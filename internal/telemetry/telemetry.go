// Package telemetry keeps the server's Prometheus metrics and serves them on an address of
// their own (--metrics-addr), never behind the model's endpoint. Names and labels are listed in
// the README; labels are bounded (tool names, outcomes, reasons), never owners or claim names.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// Namespace prefixes every metric.
const Namespace = "k8s_sandbox_mcp"

// Metrics are this process's counters, on a registry of its own.
type Metrics struct {
	reg          *prometheus.Registry
	calls        *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	inFlight     prometheus.Gauge
	created      prometheus.Counter
	deleted      prometheus.Counter
	createWait   prometheus.Histogram
	output       *prometheus.CounterVec
	authFailures *prometheus.CounterVec
	apiRequests  *prometheus.CounterVec
}

// New registers the metrics, plus the Go runtime's and the process's.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "tool_calls_total",
			Help: "Tool calls by tool and outcome (ok, tool_error, protocol_error, cancelled)."}, []string{"tool", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "tool_call_duration_seconds",
			Help: "Tool call latency by tool.", Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14)}, []string{"tool"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "tool_calls_in_flight",
			Help: "Tool calls running now."}),
		created: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "sandboxes_created_total",
			Help: "Sandboxes create_sandbox made ready."}),
		deleted: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "sandboxes_deleted_total",
			Help: "Sandboxes delete_sandbox deleted."}),
		createWait: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "sandbox_create_wait_seconds",
			Help: "Time from create_sandbox's request to a ready sandbox.", Buckets: prometheus.ExponentialBuckets(0.05, 2, 13)}),
		output: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "output_chars_total",
			Help: "Characters of command output: seen (what the command printed) and returned (what the budget let through)."}, []string{"kind"}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "auth_failures_total",
			Help: "HTTP requests refused by authentication, by reason (missing, invalid, unavailable)."}, []string{"reason"}),
		apiRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "api_requests_total",
			Help: "Requests this server sent to the Kubernetes API server, by HTTP method and status code."}, []string{"method", "code"}),
	}
	m.reg.MustRegister(m.calls, m.duration, m.inFlight, m.created, m.deleted, m.createWait, m.output, m.authFailures, m.apiRequests,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// APITransport wraps the Kubernetes client's transport so its requests are counted: what a
// flood of requests through the server costs the API server shows on /metrics.
func (m *Metrics) APITransport(rt http.RoundTripper) http.RoundTripper {
	return promhttp.InstrumentRoundTripperCounter(m.apiRequests, rt)
}

// Gauge registers a gauge read when scraped (sessions, watched namespaces).
func (m *Metrics) Gauge(name, help string, read func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, read))
}

// CallStarted and CallEnded bracket one tool call.
func (m *Metrics) CallStarted(string) { m.inFlight.Inc() }

func (m *Metrics) CallEnded(tool, outcome string, took time.Duration) {
	m.inFlight.Dec()
	m.calls.WithLabelValues(tool, outcome).Inc()
	m.duration.WithLabelValues(tool).Observe(took.Seconds())
}

// SandboxCreated counts a ready sandbox and how long it took.
func (m *Metrics) SandboxCreated(wait time.Duration) {
	m.created.Inc()
	m.createWait.Observe(wait.Seconds())
}

// SandboxDeleted counts a deleted sandbox.
func (m *Metrics) SandboxDeleted() { m.deleted.Inc() }

// Output counts the characters a command printed and those returned to the model.
func (m *Metrics) Output(seen, returned int) {
	m.output.WithLabelValues("seen").Add(float64(seen))
	m.output.WithLabelValues("returned").Add(float64(returned))
}

// AuthFailed counts a request refused by authentication.
func (m *Metrics) AuthFailed(reason string) { m.authFailures.WithLabelValues(reason).Inc() }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Serve serves /metrics on ln until ctx ends, and with profiling Go's /debug/pprof/ as
// Kubernetes components do behind --profiling: on this address of its own, never the model's.
func (m *Metrics) Serve(ctx context.Context, ln net.Listener, log zerolog.Logger, profiling bool) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info().Str("addr", ln.Addr().String()).Msg("serving Prometheus metrics at /metrics")
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}
