//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// capSeconds is the hard cap these tests run under: long enough that nothing expires while
// they read shutdown times, which is all they need (no waiting for a deletion).
const capSeconds = 600

// TestLifetimeCapHoldsEverywhere is issue 43 point 3: K8S_SANDBOX_MAX_LIFETIME_SECONDS bounded
// only renewal and extend_sandbox. create_sandbox past the cap is refused with extend's
// message; null (with K8S_SANDBOX_ALLOW_NO_SHUTDOWN) gets creation + cap; with
// K8S_SANDBOX_SUSPEND_PAUSES_LIFETIME neither a suspension, nor resume_sandbox, nor an
// auto-resume puts the claim's shutdownTime (read from the API) past creation + cap.
func TestLifetimeCapHoldsEverywhere(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t).Name
	c := connections()[2] // the python runtime by pod IP, as TestSuspendAndResume
	owner := "lifetime-cap-" + randomHex(t)[:16]
	env := append(append([]string{}, c.env...), "K8S_SANDBOX_STDIO_OWNER="+owner, fmt.Sprintf("K8S_SANDBOX_MAX_LIFETIME_SECONDS=%d", capSeconds),
		"K8S_SANDBOX_ALLOW_NO_SHUTDOWN=true", "K8S_SANDBOX_SUSPEND_PAUSES_LIFETIME=true")
	s := stdioSession(t, env, "")

	// Past the cap: a year (the issue's), and the cap plus one second.
	// Errors, not fatal: every later step is checked too, each of which failed before.
	for _, secs := range []int{31536000, capSeconds + 1} {
		res := callRaw(t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns, "shutdown_after_seconds": secs})
		if msg := resultText(res); !res.IsError {
			t.Errorf("create with %d s under a %d s cap succeeded: %s", secs, capSeconds, msg)
		} else if want := "a sandbox lives at most 10m from its creation"; !strings.Contains(msg, want) || !strings.Contains(msg, "shutdown_after_seconds may be at most 600 now") {
			t.Errorf("create with %d s under a %d s cap: %s\nwant the cap's refusal (%q ... at most 600)", secs, capSeconds, msg, want)
		}
	}
	if n := claimsOf(t, ns); n != 0 {
		t.Errorf("%d claims after the refused creates, want none", n)
	}

	// null: no timeout of its own, so the cap's.
	none := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns, "shutdown_after_seconds": nil})
	if at, limit := claimShutdown(t, ns, none.SandboxClaimName); at == nil || !at.Equal(limit) {
		t.Errorf("create with null: shutdownTime %v, want creation + cap %v", at, limit)
	}
	call[map[string]any](t, s, "delete_sandbox", sandboxArgs(none.SandboxClaimName, ns)(nil))

	// A window as long as the cap: any time a resume restarted from what was left would be past it.
	created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns, "shutdown_after_seconds": capSeconds})
	with := sandboxArgs(created.SandboxClaimName, ns)
	checkCapped := func(step string) {
		t.Helper()
		at, limit := claimShutdown(t, ns, created.SandboxClaimName)
		if at == nil || at.After(limit) {
			t.Errorf("after %s: shutdownTime %v, want one at or before creation + cap %v", step, at, limit)
		}
	}
	checkCapped("create")

	call[suspendResult](t, s, "suspend_sandbox", with(nil))
	checkCapped("suspend_sandbox")
	waitNoSandboxPod(t, ns, created.SandboxName)
	call[resumeResult](t, s, "resume_sandbox", with(map[string]any{"sandbox_ready_timeout": 300}))
	checkCapped("resume_sandbox")

	// Auto-resume: another server of the owner resumes it for a command.
	auto := stdioSession(t, append(append([]string{}, env...), "K8S_SANDBOX_AUTO_RESUME=true"), "")
	call[suspendResult](t, s, "suspend_sandbox", with(nil))
	waitNoSandboxPod(t, ns, created.SandboxName)
	if ex := call[execResult](t, auto, "execute_command", with(map[string]any{"command": "true", "timeout": 60})); ex.ExitCode != 0 {
		t.Errorf("auto-resumed command: %+v", ex)
	}
	checkCapped("an auto-resume")
	call[map[string]any](t, s, "delete_sandbox", with(nil))
}

// claimShutdown reads the claim's spec.lifecycle.shutdownTime (nil: none) and its creation
// plus the cap, from the API server.
func claimShutdown(t *testing.T, ns, name string) (*time.Time, time.Time) {
	t.Helper()
	obj, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	limit := obj.CreationTimestamp.Add(capSeconds * time.Second)
	if obj.Spec.Lifecycle == nil || obj.Spec.Lifecycle.ShutdownTime == nil {
		return nil, limit
	}
	at := obj.Spec.Lifecycle.ShutdownTime.Time
	if obj.Spec.Lifecycle.ShutdownPolicy != extv1beta1.ShutdownPolicyDelete {
		t.Errorf("claim %s: shutdown policy %q", name, obj.Spec.Lifecycle.ShutdownPolicy)
	}
	return &at, limit
}

// claimsOf counts the claims in ns.
func claimsOf(t *testing.T, ns string) int {
	t.Helper()
	l, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

// TestContradictoryLifetimeSettings: a window cap past the lifetime cap stops the server at
// start with exit code 2 and one line naming both settings, before it speaks any protocol.
func TestContradictoryLifetimeSettings(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary)
	cmd.Env = serverEnv(append(append([]string{}, connections()[4].env...),
		fmt.Sprintf("K8S_SANDBOX_MAX_SHUTDOWN_AFTER_SECONDS=%d", capSeconds+1), fmt.Sprintf("K8S_SANDBOX_MAX_LIFETIME_SECONDS=%d", capSeconds))...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit: %v, want code 2; stderr:\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "K8S_SANDBOX_MAX_SHUTDOWN_AFTER_SECONDS") || !strings.Contains(lines[0], "K8S_SANDBOX_MAX_LIFETIME_SECONDS") {
		t.Errorf("stderr %q, want one line naming both settings", stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q, want nothing", stdout.String())
	}
}
