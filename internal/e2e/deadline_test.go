//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestResultsSayTheDeadlineIsNear is issue 43.8: a result on a sandbox deleted soon after the
// call says so, and when; one on a sandbox with time left says nothing; one on a sandbox near
// its lifetime cap says nothing can move that.
func TestResultsSayTheDeadlineIsNear(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t).Name
	c := connections()[4]
	plain := stdioSession(t, c.env, "")
	capped := stdioSession(t, append([]string{"K8S_SANDBOX_MAX_LIFETIME_SECONDS=500"}, c.env...), "")
	note := func(t *testing.T, cs *mcp.ClientSession, after int) string {
		t.Helper()
		created := call[createResult](t, cs, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns, "shutdown_after_seconds": after})
		res := callRaw(t, cs, "execute_command", sandboxArgs(created.SandboxClaimName, ns)(map[string]any{"command": "true"}))
		if res.IsError {
			t.Fatalf("execute_command: %s", resultText(res))
		}
		if len(res.Content) < 2 {
			return ""
		}
		return resultText(res)
	}
	if got := note(t, plain, 600); got != "" {
		t.Errorf("a sandbox with 10 minutes left: %q", got)
	}
	if got := note(t, plain, 100); !strings.Contains(got, "unless it is used again or extended: call extend_sandbox") {
		t.Errorf("a sandbox with 100 s left: %q", got)
	}
	if got := note(t, capped, 500); !strings.Contains(got, "reaches its lifetime cap at") {
		t.Errorf("a sandbox at its 500 s cap: %q", got)
	}
}
