package serve

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// The sweeper's DELETE is refused for a session that became busy after it was found expired,
// and a busy session is never expired however old.
func TestSweepSparesBusySession(t *testing.T) {
	now := time.Now()
	s := NewSessions(SessionOptions{IdleTTL: time.Minute, Log: zerolog.Nop()})
	s.now = func() time.Time { return now }
	id := s.open("p", nil)
	leave, ok := s.enter(id, "p", true)
	if !ok {
		t.Fatal("enter")
	}
	now = now.Add(time.Hour)
	sweeper := sessionManager{s: s, any: true, sweep: true}
	if notAllowed, err := sweeper.Terminate(id); !notAllowed || err != nil {
		t.Fatalf("sweeping a busy session: %v %v", notAllowed, err)
	}
	leave()
	now = now.Add(time.Minute)
	if notAllowed, err := sweeper.Terminate(id); notAllowed || err != nil || s.isLive(id) {
		t.Fatalf("sweeping an idle session: %v %v live=%v", notAllowed, err, s.isLive(id))
	}
	s.ending.Wait()
}

// Another principal can neither validate nor end a session; its owner can, once.
func TestTerminateByOwnerOnly(t *testing.T) {
	s := NewSessions(SessionOptions{Log: zerolog.Nop()})
	var ended []string
	s.onEnd = func(id, reason string) { ended = append(ended, reason) }
	id := s.open("static:alice", nil)
	bob := sessionManager{s: s, principal: "static:bob"}
	if _, err := bob.Validate(id); err == nil {
		t.Error("bob validated alice's session")
	}
	if notAllowed, _ := bob.Terminate(id); !notAllowed || !s.isLive(id) {
		t.Fatal("bob ended alice's session")
	}
	alice := sessionManager{s: s, principal: "static:alice"}
	if notAllowed, err := alice.Terminate(id); notAllowed || err != nil {
		t.Fatalf("alice's DELETE: %v %v", notAllowed, err)
	}
	if notAllowed, err := alice.Terminate(id); notAllowed || err != nil {
		t.Fatalf("second DELETE: %v %v", notAllowed, err)
	}
	s.ending.Wait()
	if len(ended) != 1 || ended[0] != reasonDeleted {
		t.Fatalf("OnEnd ran %v", ended)
	}
	if s.total != 0 || len(s.perPrincipal) != 0 {
		t.Errorf("places left: total %d, %v", s.total, s.perPrincipal)
	}
}
