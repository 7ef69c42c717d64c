package tools

import (
	"strings"
	"testing"
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
