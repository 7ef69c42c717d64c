package kube

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/tools/record"
)

func TestAuditRecordsOnlyTheOwnersClaims(t *testing.T) {
	f := newFakes(t, cachedFixture("uid-1")...)
	withCache(t, f, defaultOptions())
	if _, err := f.c.Get(context.Background(), testNS, "mine", testOwner); err != nil { // starts the watches
		t.Fatal(err)
	}
	waitCached(t, f.c)
	rec := record.NewFakeRecorder(10)
	f.c.recorder = rec
	f.c.Audit(testNS, "mine", testOwner, "alice", "execute_command", "ok", 1500*time.Millisecond)
	f.c.Audit(testNS, "mine", "someone-else", "mallory", "execute_command", "tool_error", time.Second) // not theirs
	f.c.Audit(testNS, "nope", testOwner, "alice", "execute_command", "tool_error", time.Second)        // no such claim
	f.c.Audit(testNS, "gone", testOwner, "alice", "delete_sandbox", "ok", time.Second)                 // left the cache
	f.c.Audit(testNS, "mine", testOwner, "alice", "run_code", "tool_error", 2*time.Second)
	want := []string{
		"Normal MCPToolCall execute_command by alice: ok in 1.500s",
		"Normal MCPToolCall delete_sandbox by alice: ok in 1.000s",
		"Warning MCPToolCall run_code by alice: tool_error in 2.000s",
	}
	for _, w := range want {
		select {
		case got := <-rec.Events:
			if got != w {
				t.Errorf("event %q, want %q", got, w)
			}
		default:
			t.Errorf("missing event %q", w)
		}
	}
	select {
	case extra := <-rec.Events:
		t.Errorf("unexpected event %q", extra)
	default:
	}
}
