package kube

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
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

// The recorder's correlator computes a patch for every Event before its spam filter drops it;
// the same bucket in front of it keeps the dropped ones from reaching it at all.
func TestAuditDropsWhatTheSpamFilterWouldBeforeTheRecorder(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1e9, 0))
	rec := record.NewFakeRecorder(1000)
	f := newSpamFiltered(rec, clk)
	ref := func(name string) *corev1.ObjectReference {
		return &corev1.ObjectReference{Kind: "SandboxClaim", Namespace: testNS, Name: name, UID: types.UID("uid-" + name)}
	}
	send := func(name, kind string, n int) int {
		before := len(rec.Events)
		for range n {
			f.Event(ref(name), kind, AuditReason, "m")
		}
		return len(rec.Events) - before
	}
	for _, step := range []struct {
		what        string
		name, kind  string
		n, want     int
		advanceSecs int
	}{
		{"the burst passes", "a", corev1.EventTypeNormal, auditBurst, auditBurst, 0},
		{"then nothing", "a", corev1.EventTypeNormal, 10, 0, 0},
		{"another claim has its own bucket", "b", corev1.EventTypeNormal, 3, 3, 0},
		{"warnings have their own bucket", "a", corev1.EventTypeWarning, 3, 3, 0},
		{"one more per refill period", "a", corev1.EventTypeNormal, 5, 1, int(1 / auditQPS)},
	} {
		clk.SetTime(clk.Now().Add(time.Duration(step.advanceSecs) * time.Second))
		if got := send(step.name, step.kind, step.n); got != step.want {
			t.Errorf("%s: %d of %d reached the recorder, want %d", step.what, got, step.n, step.want)
		}
	}
}
