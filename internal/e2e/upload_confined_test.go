//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
)

// TestUploadCreatesParentsOnlyInsideTheWorkspace: with a symlink to / in the working
// directory, upload_file through it is refused and creates no directory outside the
// workspace, on both runtimes; ordinary parent directories are still created.
func TestUploadCreatesParentsOnlyInsideTheWorkspace(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t, bothPools...)
	for _, c := range []connection{connections()[0], connections()[4]} { // python runtime via gateway; sandboxd
		t.Run(c.name, func(t *testing.T) {
			s := stdioSession(t, c.env, "")
			created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
			with := func(extra map[string]any) map[string]any {
				m := map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name}
				for k, v := range extra {
					m[k] = v
				}
				return m
			}
			b := make([]byte, 6)
			_, _ = rand.Read(b)
			outside := "/tmp/k8s-sandbox-mcp-escape-" + hex.EncodeToString(b)
			if r := call[execResult](t, s, "execute_command", with(map[string]any{"command": "ln -s / root && echo ok"})); r.Stdout != "ok\n" {
				t.Fatalf("ln -s: %+v", r)
			}
			msg := callError(t, s, "upload_file", with(map[string]any{"path": "root" + outside + "/sub/f.txt", "content": "x"}))
			if !strings.Contains(msg, "inside the sandbox's working directory") {
				t.Errorf("upload through the link: %s", msg)
			}
			probe := "test -e " + outside + " && echo exists || echo absent"
			if r := call[execResult](t, s, "execute_command", with(map[string]any{"command": probe})); r.Stdout != "absent\n" {
				t.Errorf("%s after the refused upload: %q", outside, r.Stdout)
			}
			call[struct{}](t, s, "upload_file", with(map[string]any{"path": "ok/sub/f.txt", "content": "fine"}))
			if r := call[execResult](t, s, "execute_command", with(map[string]any{"command": "cat ok/sub/f.txt"})); r.Stdout != "fine" {
				t.Errorf("ordinary upload: %q", r.Stdout)
			}
			call[struct{}](t, s, "delete_sandbox", with(nil))
		})
	}
}
