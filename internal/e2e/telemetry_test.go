//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// TestPrometheusMetrics: the counters on --metrics-addr match the calls a client made, and
// the metrics are not served on the MCP address.
func TestPrometheusMetrics(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	const token = "metrics-token-0123456789"
	c := connections()[4]
	srv := serve(t, 20*time.Second, true, append([]string{"K8S_SANDBOX_AUTH__TOKENS=alice:" + token}, c.env...),
		"--http", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0")
	base, metricsAddr := srv.base, srv.metrics
	s, err := authSession(t, base, token, "2025-11-25") // a session, for the sessions gauge
	if err != nil {
		t.Fatal(err)
	}
	get := func(u string) (int, string) {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// Another client's claim in the same namespace, bound like ours: the watch cache must not hold it
	// or its Sandbox (the cache-size gauges below count exactly one of each).
	foreign := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Name: "python-client-claim", Namespace: ns.Name,
		Labels: map[string]string{"agents.x-k8s.io/created-by": "python-client"}},
		Spec: extv1beta1.SandboxClaimSpec{WarmPoolRef: extv1beta1.SandboxWarmPoolRef{Name: c.pool}}}
	claims := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns.Name)
	if _, err := claims.Create(t.Context(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
	with := sandboxArgs(created.SandboxClaimName, ns.Name)
	for _, cmd := range []string{"echo one", "printf 'x%.0s' $(seq 1 5000)", "exit 3"} {
		call[execResult](t, s, "execute_command", with(map[string]any{"command": cmd, "max_output_chars": 1000}))
	}
	callError(t, s, "execute_command", map[string]any{"sandbox_claim_name": "no-such-claim", "namespace": ns.Name, "command": "true"})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		fc, err := claims.Get(t.Context(), foreign.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if fc.Status.SandboxStatus.Name != "" {
			time.Sleep(time.Second) // a watch that selected it would have delivered it by now
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the foreign claim was never bound to a Sandbox")
		}
	}
	// The cache-size gauges follow our claim in and out of the watch cache.
	cacheHolds := func(n int) {
		t.Helper()
		want := []string{fmt.Sprintf("\nk8s_sandbox_mcp_cached_claims %d\n", n), fmt.Sprintf("\nk8s_sandbox_mcp_cached_sandboxes %d\n", n)}
		var text string
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if _, text = get("http://" + metricsAddr + "/metrics"); strings.Contains(text, want[0]) && strings.Contains(text, want[1]) {
				return
			}
		}
		t.Errorf("/metrics never had %q; it had:\n%s", want, grepLines(text, "k8s_sandbox_mcp_cached_"))
	}
	cacheHolds(1)
	call[map[string]any](t, s, "delete_sandbox", with(nil))
	cacheHolds(0)
	if _, err := authSession(t, base, "wrong-token-0123456789", ""); err == nil {
		t.Fatal("a wrong token connected")
	}

	code, text := get("http://" + metricsAddr + "/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`k8s_sandbox_mcp_tool_calls_total{outcome="ok",tool="create_sandbox"} 1`,
		`k8s_sandbox_mcp_tool_calls_total{outcome="ok",tool="execute_command"} 3`,
		`k8s_sandbox_mcp_tool_calls_total{outcome="tool_error",tool="execute_command"} 1`,
		`k8s_sandbox_mcp_tool_calls_total{outcome="ok",tool="delete_sandbox"} 1`,
		`k8s_sandbox_mcp_sandboxes_created_total 1`,
		`k8s_sandbox_mcp_sandboxes_deleted_total 1`,
		`k8s_sandbox_mcp_output_chars_total{kind="seen"} 5004`, // "one\n" and 5000 x
		`k8s_sandbox_mcp_tool_calls_in_flight 0`,
		`k8s_sandbox_mcp_sessions 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if !strings.Contains(text, `k8s_sandbox_mcp_auth_failures_total{reason="invalid"}`) {
		t.Error("/metrics does not count the refused token")
	}
	if code, _ := get(base + "/metrics"); code == 200 {
		t.Error("metrics are served on the MCP address")
	}

	// The audit trail: Events on the claim naming the principal, the tool and the outcome.
	want := []string{"create_sandbox by static:alice: ok", "execute_command by static:alice: ok", "delete_sandbox by static:alice: ok"}
	var seen []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		evs, err := stack.Kube.CoreV1().Events(ns.Name).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=MCPToolCall"})
		if err != nil {
			t.Fatal(err)
		}
		seen = seen[:0]
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == created.SandboxClaimName && e.InvolvedObject.Kind == "SandboxClaim" {
				seen = append(seen, e.Message)
			}
		}
		if all := strings.Join(seen, "\n"); strings.Contains(all, want[0]) && strings.Contains(all, want[1]) && strings.Contains(all, want[2]) {
			break
		}
	}
	for _, w := range want {
		if !strings.Contains(strings.Join(seen, "\n"), w) {
			t.Errorf("no Event %q on the claim; saw %q", w, seen)
		}
	}
	for _, m := range seen {
		if strings.Contains(m, "echo") || strings.Contains(m, "exit 3") {
			t.Errorf("an Event carries a command: %q", m)
		}
	}
}

// grepLines returns text's lines that contain sub.
func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
