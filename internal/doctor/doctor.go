// Package doctor checks, in order, what the server needs from a cluster: the API, the
// agent-sandbox CRDs and controller, warm pools with ready sandboxes, the server identity's
// RBAC, the metrics API, NetworkPolicy enforcement, and (optionally) that the configured
// connection reaches a sandbox. Each check is one line with a fix, so that a user finds a
// missing piece before the first tool call fails on it.
package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	extclientset "sigs.k8s.io/agent-sandbox/clients/k8s/extensions/clientset/versioned"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/config"
)

// Status is a check's verdict.
type Status string

const (
	OK   Status = "OK"
	Warn Status = "WARN" // the server works, with something missing or not provable
	Fail Status = "FAIL" // a tool (named in the message) breaks
)

// Result is one check's line.
type Result struct {
	Check   string `json:"check"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

// Checks' names, in the order they run and print.
const (
	CheckAPI        = "api"
	CheckCRDs       = "crds"
	CheckController = "controller"
	CheckPools      = "pools"
	CheckRBAC       = "rbac"
	CheckMetrics    = "metrics"
	CheckNetPol     = "networkpolicy"
	CheckProbe      = "probe"
)

// Env is what the checks read the cluster with, and the server's own settings.
type Env struct {
	Kube       kubernetes.Interface
	Extensions extclientset.Interface
	Config     config.Config
	// Server and User describe the connection (for the api line); Namespace is where calls
	// without a namespace go (the pinned one, else the kubeconfig's), as the server uses it.
	Server, User, Namespace string
	// NoMetricsTool: the settings leave get_sandbox_metrics out, so the metrics API and its
	// verb are not needed.
	NoMetricsTool bool
	// Probe, when set, creates a claim and runs `true` in it through the server's connection.
	Probe *Prober
}

// Run runs every check in order. A failed API check ends the run: nothing else can be read.
func Run(ctx context.Context, env Env) []Result {
	out := []Result{checkAPI(ctx, env)}
	if out[0].Status == Fail {
		return out
	}
	crds := checkCRDs(ctx, env)
	out = append(out, crds, checkController(ctx, env))
	if crds.Status == Fail {
		out = append(out, Result{Check: CheckPools, Status: Fail, Message: "not checked: the agent-sandbox CRDs are missing", Fix: crds.Fix})
	} else {
		out = append(out, checkPools(ctx, env))
	}
	// The probe runs before the NetworkPolicy check, which reads what its sandbox could
	// reach, and prints last.
	var probe Result
	var eg egress
	if env.Probe != nil {
		probe, eg = runProbe(ctx, env, crds.Status != Fail)
	}
	out = append(out, checkRBAC(ctx, env), checkMetrics(ctx, env), checkNetworkPolicy(ctx, env, eg))
	if env.Probe != nil {
		out = append(out, probe)
	}
	return out
}

// Failed reports whether any result is a FAIL (the exit code's rule).
func Failed(rs []Result) bool {
	for _, r := range rs {
		if r.Status == Fail {
			return true
		}
	}
	return false
}

// Print writes the results: one line each, or one JSON object a line when asJSON.
func Print(w io.Writer, rs []Result, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, r := range rs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	for _, r := range rs {
		line := fmt.Sprintf("%-4s %-13s %s", r.Status, r.Check, r.Message)
		if r.Fix != "" {
			line += " -- fix: " + r.Fix
		}
		if _, err := fmt.Fprintln(w, strings.TrimSpace(line)); err != nil {
			return err
		}
	}
	return nil
}

// namespaces are those the server serves: the allowlist, else the one calls default to.
func (e Env) namespaces() []string {
	if len(e.Config.AllowedNamespaces) > 0 {
		return e.Config.AllowedNamespaces
	}
	return []string{e.Namespace}
}

// callTimeout bounds each API call of a check, so an unanswering server fails a line, not the run.
const callTimeout = 10 * time.Second

func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, callTimeout)
}
