package tools

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

func TestDeadlineNote(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		d    kube.Deadline
		want string // "" for no note
	}{
		{name: "no shutdown time", d: kube.Deadline{}},
		{name: "far", d: kube.Deadline{At: now.Add(deadlineNoticeWithin)}},
		{name: "the cap, near, but the time is nearer", d: kube.Deadline{At: now.Add(90 * time.Second), Cap: now.Add(5 * time.Minute)},
			want: "in 1m30s) unless it is used again or extended"},
		{name: "near", d: kube.Deadline{At: now.Add(90 * time.Second)}, want: "in 1m30s) unless it is used again or extended: call extend_sandbox"},
		{name: "past", d: kube.Deadline{At: now.Add(-time.Second)}, want: "(in 0s)"},
		{name: "the cap, far", d: kube.Deadline{At: now.Add(capNoticeWithin), Cap: now.Add(capNoticeWithin)}},
		{name: "the cap, near, and no renewal moves the time past it", d: kube.Deadline{At: now.Add(5 * time.Minute), Cap: now.Add(5 * time.Minute)},
			want: "reaches its lifetime cap at 2026-12-07T12:05:00Z (in 5m0s) and is then deleted with its files; neither use nor extend_sandbox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := deadlineNote("sandbox-claim-1", tc.d, now)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("deadlineNote = %q, want one with %q", got, tc.want)
			}
		})
	}
}

// The README's figures are the constants'.
func TestDeadlineNoteREADME(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("one deleted within %d\n  minutes of the call unless used again or extended (\"call extend_sandbox to keep it longer\"), or one whose\n  cap is within %d minutes",
		int(deadlineNoticeWithin.Minutes()), int(capNoticeWithin.Minutes()))
	if !strings.Contains(string(b), want) {
		t.Errorf("README does not say %q", want)
	}
}
