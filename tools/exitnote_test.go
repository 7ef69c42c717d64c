package tools

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

func TestExitNote(t *testing.T) {
	tests := []struct {
		code int
		want string // substring; "" means no note
	}{
		{0, ""},
		{1, ""},
		{127, ""},
		{128, ""},
		{137, "killed by SIGKILL (exit code 137)"},
		{-1, "reports -1 and not which one"},
		{143, "killed by signal 15 (exit code 143)"},
		{130, "killed by signal 2 (exit code 130)"},
		{193, ""},
		{255, ""},
	}
	for _, tt := range tests {
		got := exitNote(tt.code)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("exitNote(%d) = %q, want it to contain %q", tt.code, got, tt.want)
		}
	}
	if n := exitNote(137); !strings.Contains(n, "memory limit") {
		t.Errorf("exitNote(137) does not name the memory limit: %q", n)
	}
}

// A command killed by a signal (-1 from sandboxd up to v1.0.1, 137 or 143 from a shell or a
// newer sandboxd) is the command's own end while the sandbox stays ready (the OOM killer), and
// an error naming the sandbox when the sandbox stopped.
func TestKilledCommandTellsASandboxStopFromAnOOMKill(t *testing.T) {
	const stoppedMsg = `Could not execute the command in sandbox "mine": the sandbox stopped while the command ran`
	tests := []struct {
		name      string
		notReady  bool  // the Sandbox's Ready condition is false
		probeErr  error // what a read from the runtime returns
		wantError bool
		want      string // for a command killed alone: "" means the exit code's own note
	}{
		{"sandbox still ready, runtime answers", false, nil, false, ""},
		{"runtime slow to answer proves nothing", false, context.DeadlineExceeded, false, ""},
		{"sandbox not ready", true, nil, true, stoppedMsg},
		{"runtime gone before the condition changed", false, fmt.Errorf("exists: %w: connection refused", conn.ErrUnreachable), true, stoppedMsg},
	}
	for _, code := range []int{-1, 137, 143} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("exit %d, %s", code, tt.name), func(t *testing.T) {
				h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.StoppedWithin = 50 * time.Millisecond })
				h.claims.add("default", "mine", testOwner)
				h.claims.stopped = tt.notReady
				h.conn.existsErr = tt.probeErr
				h.conn.exitCode = code
				want := tt.want
				if want == "" {
					want = exitNote(code)
				}
				res := h.call(t, "execute_command", map[string]any{"sandbox_claim_name": "mine", "command": "sleep 100"})
				if res.IsError != tt.wantError || !strings.Contains(text(res), want) {
					t.Errorf("isError %v, %s; want isError %v and %q", res.IsError, text(res), tt.wantError, want)
				}
			})
		}
	}
	// Any other signal is the command's own end: the sandbox is not asked.
	h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.StoppedWithin = 50 * time.Millisecond })
	h.claims.add("default", "mine", testOwner)
	h.claims.stopped = true
	h.conn.exitCode = 130
	if res := h.call(t, "execute_command", map[string]any{"sandbox_claim_name": "mine", "command": "sleep 100"}); res.IsError {
		t.Errorf("exit 130 in a stopped sandbox: %s; want the command's own result", text(res))
	}
}
