//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

// TestCreateWithEnv: create_sandbox's env reaches the sandbox's own environment through the
// claim (a cold start, so the Sandbox is named like the claim), and a template whose policy
// refuses env fails at once with advice instead of waiting for the ready timeout.
func TestCreateWithEnv(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	c := connections()[2] // python runtime, in-cluster by pod IP; its template allows env
	s := stdioSession(t, c.env, "")
	created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name,
		"env": map[string]any{"GREETING": "hello from the claim", "PYTHONPATH": "/opt/lib"}})
	if created.SandboxName != created.SandboxClaimName {
		t.Errorf("a claim with env should start its own sandbox (named %q), got %q", created.SandboxClaimName, created.SandboxName)
	}
	ex := call[execResult](t, s, "execute_command", map[string]any{"sandbox_claim_name": created.SandboxClaimName,
		"namespace": ns.Name, "command": `printf '%s|%s' "$GREETING" "$PYTHONPATH"`})
	if ex.Stdout != "hello from the claim|/opt/lib" {
		t.Errorf("the sandbox's environment: %q (stderr %q)", ex.Stdout, ex.Stderr)
	}

	start := time.Now()
	msg := callError(t, s, "create_sandbox", map[string]any{"warmpool": localstack.SandboxdPool, "namespace": ns.Name,
		"env": map[string]any{"A": "b"}, "sandbox_ready_timeout": 120, "labels": map[string]any{"env-case": "refused"}})
	if !strings.Contains(msg, "EnvVarsInjectionRejected") || !strings.Contains(msg, "Leave env out") {
		t.Errorf("env refused by the template: %s", msg)
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("the refusal took %s; it is terminal and should not wait for the ready timeout", d)
	}
	waitNoClaims(t, ns.Name, "env-case", "refused")
}
