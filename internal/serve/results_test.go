package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/budget"
)

// TestResultBytesInFlight: a tool's result takes its bytes from its request's lease (the
// budget bodyLimit puts in the context), holds them until the response has been written, and
// is refused, after waiting, when the principal's or the server's bound is full; a result
// larger than one principal may hold is refused at once.
func TestResultBytesInFlight(t *testing.T) {
	set := HTTPSettings{MaxBodyBytes: 128 << 10, MaxBodyBytesInFlightPerPrincipal: 1 << 20, MaxBodyBytesInFlight: 1536 << 10}.withDefaults()
	tests := []struct {
		name         string
		held         map[string]int64
		result       int64
		wantErr      string // "" when the result fits
		wantAtOnce   bool   // refused without waiting
		wantHeldThen int64  // what alice holds while the handler runs
	}{
		{name: "room", held: map[string]int64{"alice": 256 << 10}, result: 512 << 10, wantHeldThen: 768<<10 + 2},
		{name: "principal full", held: map[string]int64{"alice": 768 << 10}, result: 512 << 10, wantErr: VarMaxBodyBytesInFlightPerPrincipal},
		{name: "total full", held: map[string]int64{"bob": 1 << 20, "carol": 256 << 10}, result: 512 << 10, wantErr: VarMaxBodyBytesInFlight},
		{name: "never fits", result: 1 << 20, wantErr: "more than the 1048576 one principal may hold", wantAtOnce: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bodies := newInFlight(set)
			for p, n := range tc.held {
				l := bodies.lease(auth.Static(p).String())
				if no := l.grow(context.Background(), n); no != nil {
					t.Fatalf("holding %d for %s: %s", n, p, no.message)
				}
				defer l.release()
			}
			var err error
			var heldThen int64
			h := bodyLimit(func(*http.Request) (int64, string) { return set.MaxBodyBytes, "" }, bodies,
				http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					err = budget.Reserve(r.Context(), tc.result)
					heldThen = heldBy(bodies, auth.Static("alice").String())
				}))
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
			req = req.WithContext(auth.WithPrincipal(req.Context(), auth.Static("alice")))
			start := time.Now()
			h.ServeHTTP(httptest.NewRecorder(), req)
			if waited := time.Since(start); tc.wantErr != "" && !tc.wantAtOnce && waited < inFlightWait {
				t.Errorf("refused after %s, before waiting %s for room", waited, inFlightWait)
			} else if tc.wantAtOnce && waited >= inFlightWait {
				t.Errorf("a result that can never fit waited %s", waited)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one naming %q", err, tc.wantErr)
			case tc.wantErr == "" && heldThen != tc.wantHeldThen:
				t.Errorf("alice held %d bytes while answering, want %d (her other requests', the body's and the result's)", heldThen, tc.wantHeldThen)
			}
			if held := heldBy(bodies, auth.Static("alice").String()); held != tc.held["alice"] {
				t.Errorf("alice holds %d bytes after the response, want the %d her other requests hold", held, tc.held["alice"])
			}
		})
	}
}

// TestWaitingResultLetsBodiesPass: a result waiting for room does not queue ahead of the
// principal's small requests, which would otherwise wait behind it and be refused.
func TestWaitingResultLetsBodiesPass(t *testing.T) {
	set := HTTPSettings{MaxBodyBytes: 128 << 10, MaxBodyBytesInFlightPerPrincipal: 1 << 20, MaxBodyBytesInFlight: 2 << 20}.withDefaults()
	bodies := newInFlight(set)
	alice := auth.Static("alice").String()
	other := bodies.lease(alice)
	if no := other.grow(context.Background(), 768<<10); no != nil {
		t.Fatal(no.message)
	}
	defer other.release()
	waiting := bodies.lease(alice)
	defer waiting.release()
	done := make(chan error, 1)
	go func() { done <- resultBudget{waiting}.Reserve(context.Background(), 512<<10) }()
	time.Sleep(3 * resultPoll) // the result is waiting (a slower start only makes the body's case easier)
	small := bodies.lease(alice)
	start := time.Now()
	if no := small.grow(context.Background(), 64<<10); no != nil {
		t.Errorf("a small body behind a waiting result: %s", no.message)
	}
	if waited := time.Since(start); waited >= inFlightWait/2 {
		t.Errorf("a small body waited %s behind a result", waited)
	}
	small.release()
	if err := <-done; err == nil || !strings.Contains(err.Error(), VarMaxBodyBytesInFlightPerPrincipal) {
		t.Errorf("the result that never found room: %v", err)
	}
}
