//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// listSandboxesResult is list_sandboxes' answer, as far as these tests read it.
type listSandboxesResult struct {
	Sandboxes []struct {
		SandboxClaimName string `json:"sandbox_claim_name"`
		Namespace        string `json:"namespace"`
		Ready            bool   `json:"ready"`
		State            string `json:"state"`
		Pool             string `json:"pool"`
		RequestID        string `json:"request_id"`
		ShutdownTime     string `json:"shutdown_time"`
	} `json:"sandboxes"`
}

func (l listSandboxesResult) names() []string {
	var out []string
	for _, s := range l.Sandboxes {
		out = append(out, s.SandboxClaimName)
	}
	return out
}

// authMCPSession is a raw 2025-11-25 session of the principal behind token.
func authMCPSession(base, token string) *mcpSession {
	return &mcpSession{base: base, client: &http.Client{Transport: bearer{token}, Timeout: 3 * time.Minute}}
}

// structuredText decodes a raw call's answer, whose text is the structured result as JSON.
func structuredText[T any](t *testing.T, tool string, r toolResult) T {
	t.Helper()
	var out T
	if r.status != http.StatusOK || r.isError {
		t.Fatalf("%s: %d isError=%v %s", tool, r.status, r.isError, r.body)
	}
	if err := json.Unmarshal([]byte(r.text), &out); err != nil {
		t.Fatalf("%s: %q: %v", tool, r.text, err)
	}
	return out
}

// TestSandboxOutlivesItsSession is issue 30.3 over HTTP with authentication: a 2025-11-25
// session of alice creates a sandbox and ends (DELETE); the sandbox stays, a new session of
// alice (and a sessionless call of hers) lists and uses it, and bob neither sees nor reaches it.
func TestSandboxOutlivesItsSession(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t).Name
	const aliceToken, bobToken = "outlive-alice-0123456789", "outlive-bob-0123456789ab"
	c := connections()[4]
	base := httpServer(t, append([]string{"K8S_SANDBOX_AUTH__TOKENS=alice:" + aliceToken + ",bob:" + bobToken,
		"K8S_SANDBOX_ALLOWED_NAMESPACES=" + ns}, c.env...))

	first := authMCPSession(base, aliceToken)
	first.open(t)
	created := structuredText[createResult](t, "create_sandbox",
		first.call(t, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns}))
	marker := first.call(t, "execute_command", map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns,
		"command": "echo outlived > marker.txt"})
	if marker.isError {
		t.Fatalf("execute_command: %s", marker.text)
	}
	if code, body := first.send(t, http.MethodDelete, nil); code != http.StatusOK {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	// An anonymous session's release runs within moments of its end: give it every chance.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		obj, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns).Get(t.Context(), created.SandboxClaimName, metav1.GetOptions{})
		if err != nil || obj.DeletionTimestamp != nil {
			t.Fatalf("the claim did not outlive its session: %v", err)
		}
	}

	second := authMCPSession(base, aliceToken)
	second.open(t)
	listed := structuredText[listSandboxesResult](t, "list_sandboxes", second.call(t, "list_sandboxes", map[string]any{"namespace": "*"}))
	if len(listed.Sandboxes) != 1 || listed.Sandboxes[0].SandboxClaimName != created.SandboxClaimName || !listed.Sandboxes[0].Ready ||
		listed.Sandboxes[0].State != "running" || listed.Sandboxes[0].Pool != c.pool {
		t.Fatalf("a new session of alice lists %+v, want her %s", listed, created.SandboxClaimName)
	}
	out := structuredText[execResult](t, "execute_command", second.call(t, "execute_command",
		map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns, "command": "cat marker.txt"}))
	if strings.TrimSpace(out.Stdout) != "outlived" {
		t.Errorf("the new session reads %+v", out)
	}

	sessionless, err := authSession(t, base, aliceToken, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := call[listSandboxesResult](t, sessionless, "list_sandboxes", map[string]any{"namespace": ns}).names(); len(got) != 1 || got[0] != created.SandboxClaimName {
		t.Errorf("alice without a session lists %v", got)
	}

	bob := authMCPSession(base, bobToken)
	bob.open(t)
	if got := structuredText[listSandboxesResult](t, "list_sandboxes", bob.call(t, "list_sandboxes", map[string]any{"namespace": "*"})); len(got.Sandboxes) != 0 {
		t.Errorf("bob lists %v", got.names())
	}
	if r := bob.call(t, "execute_command", map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns, "command": "true"}); !r.isError || !strings.Contains(r.text, "not found") {
		t.Errorf("bob's execute_command on alice's sandbox: %+v", r)
	}
	if r := second.call(t, "delete_sandbox", map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns}); r.isError {
		t.Errorf("delete_sandbox: %s", r.text)
	}
}

// TestOneRequestOneClaimAcrossReplicas: eight create_sandbox calls with one request_id, at
// once, half through each of two server processes, make exactly one claim, and every call
// answers with it.
func TestOneRequestOneClaimAcrossReplicas(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t).Name
	const token, racers = "request-alice-0123456789", 8
	c := connections()[4]
	env := append([]string{"K8S_SANDBOX_AUTH__TOKENS=alice:" + token}, c.env...)
	var sessions []*mcp.ClientSession
	for range 2 {
		s, err := authSession(t, httpServer(t, env), token, "")
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s)
	}
	requestID := "race-" + randomHex(t)[:12]
	names := make([]string, racers)
	errs := make([]string, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := sessions[i%2].CallTool(ctx, &mcp.CallToolParams{Name: "create_sandbox",
				Arguments: map[string]any{"warmpool": c.pool, "namespace": ns, "request_id": requestID}})
			switch {
			case err != nil:
				errs[i] = err.Error()
			case res.IsError:
				errs[i] = resultText(res)
			default:
				var cr createResult
				b, _ := json.Marshal(res.StructuredContent)
				_ = json.Unmarshal(b, &cr)
				names[i] = cr.SandboxClaimName
			}
		})
	}
	wg.Wait()
	for i := range racers {
		if errs[i] != "" || names[i] == "" || names[i] != names[0] {
			t.Errorf("racer %d (replica %d): claim %q, error %q; racer 0 got %q", i, i%2, names[i], errs[i], names[0])
		}
	}
	list, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns).List(t.Context(), metav1.ListOptions{LabelSelector: sessionLabel})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != names[0] || list.Items[0].Annotations["mcp.k8s-agent-sandbox/request-id"] != requestID {
		t.Fatalf("%d claims in the namespace, want exactly %s for request %s: %v", len(list.Items), names[0], requestID, claimsIn(t, ns))
	}
	listed := call[listSandboxesResult](t, sessions[1], "list_sandboxes", map[string]any{"namespace": ns})
	if len(listed.Sandboxes) != 1 || listed.Sandboxes[0].RequestID != requestID {
		t.Errorf("list_sandboxes: %+v", listed)
	}
	call[struct{}](t, sessions[0], "delete_sandbox", map[string]any{"sandbox_claim_name": names[0], "namespace": ns})
}

// TestStdioReattachAfterRestart: a stdio server with a fixed K8S_SANDBOX_STDIO_OWNER ends
// (closed with KEEP_SANDBOXES_ON_SESSION_END=true, or killed with SIGKILL) and another one
// with the same owner lists its sandbox, uses it, and gets it back for the same request_id.
func TestStdioReattachAfterRestart(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t).Name
	c := connections()[4]
	for _, tc := range []struct {
		name string
		keep bool
	}{{"kept on close", true}, {"killed", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := append([]string{"K8S_SANDBOX_STDIO_OWNER=reattach-" + randomHex(t)[:12]}, c.env...)
			if tc.keep {
				env = append(env, "K8S_SANDBOX_KEEP_SANDBOXES_ON_SESSION_END=true")
			}
			first, cmd := stdioServer(t, env, "")
			create := map[string]any{"warmpool": c.pool, "namespace": ns, "request_id": "reattach"}
			created := call[createResult](t, first, "create_sandbox", create)
			with := sandboxArgs(created.SandboxClaimName, ns)
			call[execResult](t, first, "execute_command", with(map[string]any{"command": "echo before > marker.txt"}))
			if tc.keep {
				if err := first.Close(); err != nil {
					t.Errorf("closing the first server: %v", err)
				}
			} else if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}

			second := stdioSession(t, env, "")
			listed := call[listSandboxesResult](t, second, "list_sandboxes", map[string]any{"namespace": ns})
			if got := listed.names(); len(got) != 1 || got[0] != created.SandboxClaimName || !listed.Sandboxes[0].Ready {
				t.Fatalf("the restarted server lists %+v, want %s", listed, created.SandboxClaimName)
			}
			if r := call[execResult](t, second, "execute_command", with(map[string]any{"command": "cat marker.txt"})); strings.TrimSpace(r.Stdout) != "before" {
				t.Errorf("the restarted server reads %+v", r)
			}
			if again := call[createResult](t, second, "create_sandbox", create); again.SandboxClaimName != created.SandboxClaimName {
				t.Errorf("the same request_id after the restart made %s, want %s", again.SandboxClaimName, created.SandboxClaimName)
			}
			call[struct{}](t, second, "delete_sandbox", with(nil))
		})
	}
}
