package tools

import (
	"strings"
	"testing"
	"time"
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

// A command killed by a signal (-1 from sandboxd) is the command's own end while the sandbox
// stays ready (the OOM killer), and an error naming the sandbox when the sandbox stopped.
func TestKilledCommandTellsASandboxStopFromAnOOMKill(t *testing.T) {
	tests := []struct {
		name    string
		stopped bool
		want    string
	}{
		{"sandbox still ready", false, "out-of-memory killer"},
		{"sandbox stopped", true, `Could not execute the command in sandbox "mine": the sandbox stopped while the command ran`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.StoppedWithin = 50 * time.Millisecond })
			h.claims.add("default", "mine", testOwner)
			h.claims.stopped = tt.stopped
			h.conn.exitCode = -1
			res := h.call(t, "execute_command", map[string]any{"sandbox_claim_name": "mine", "command": "sleep 100"})
			if res.IsError != tt.stopped || !strings.Contains(text(res), tt.want) {
				t.Errorf("isError %v, %s; want isError %v and %q", res.IsError, text(res), tt.stopped, tt.want)
			}
		})
	}
}
