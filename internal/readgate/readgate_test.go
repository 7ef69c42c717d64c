package readgate

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// store is a claim record with a cache that may lag behind the API.
type store struct {
	mu         sync.Mutex
	cache, api []string // the tokens each knows
	gone       bool
	cacheReads int
	apiReads   int
}

func (s *store) read(_ context.Context, _ Ref, fresh bool) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fresh {
		s.apiReads++
	} else {
		s.cacheReads++
	}
	if s.gone {
		return nil, kube.ErrNotFound
	}
	if fresh {
		return slices.Clone(s.api), nil
	}
	return slices.Clone(s.cache), nil
}

func TestGate(t *testing.T) {
	s := &store{cache: []string{"old"}, api: []string{"old", "new"}}
	clock := clocktesting.NewFakeClock(time.Now())
	g := NewWithClock(s.read, clock)
	ref := Ref{"ns", "c"}
	valid := func(tok string) func([]string) bool {
		return func(v []string) bool { return slices.Contains(v, tok) }
	}
	check := func(tok string) bool {
		v, err := g.Check(context.Background(), ref, valid(tok))
		return err == nil && valid(tok)(v)
	}
	if !check("old") || s.apiReads != 0 {
		t.Fatalf("a token the cache knows: API reads %d", s.apiReads)
	}
	if !check("new") || s.apiReads != 1 {
		t.Fatalf("a token only the API knows (the cache lags): API reads %d", s.apiReads)
	}
	for range 100 {
		if check("wrong") {
			t.Fatal("a wrong token passed")
		}
	}
	if s.apiReads != 1 {
		t.Errorf("100 wrong tokens within ReadFor cost %d API reads, want none beyond the first", s.apiReads-1)
	}
	cacheReads := s.cacheReads
	check("wrong")
	if s.cacheReads != cacheReads {
		t.Error("a refused read did not answer a wrong token before the cache")
	}
	clock.Step(ReadFor + time.Millisecond)
	check("wrong")
	if s.apiReads != 2 {
		t.Errorf("after ReadFor: API reads %d, want 2", s.apiReads)
	}
	// A claim that is gone: one read, then refused before any read.
	s.gone = true
	g.Forget(ref)
	reads := s.apiReads + s.cacheReads
	for range 50 {
		if _, err := g.Check(context.Background(), ref, valid("old")); err != kube.ErrNotFound {
			t.Fatalf("a claim that is gone: %v", err)
		}
	}
	if n := s.apiReads + s.cacheReads - reads; n != 1 {
		t.Errorf("50 requests for a claim that is gone cost %d reads, want 1", n)
	}
}

func TestAdmitTake(t *testing.T) {
	var nilAdmit Admit
	release, err := nilAdmit.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	release()
	n := 0
	a := Admit(func(context.Context) (func(), error) { return func() { n++ }, nil })
	release, _ = a.Take(context.Background())
	release()
	release()
	if n != 1 {
		t.Errorf("released %d times, want once", n)
	}
}
