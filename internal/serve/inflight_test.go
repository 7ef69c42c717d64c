package serve

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
)

// TestBodyBytesInFlight holds part of the bounds with other requests, then sends one body.
func TestBodyBytesInFlight(t *testing.T) {
	const body = 100 << 10
	set := HTTPSettings{MaxBodyBytes: 128 << 10, MaxBodyBytesInFlightPerPrincipal: 256 << 10, MaxBodyBytesInFlight: 384 << 10}.withDefaults()
	tests := []struct {
		name         string
		held         map[string]int64 // static principal's name -> bytes held by its requests in flight
		chunked      bool
		wantStatus   int
		wantRetry    string
		wantContains string
	}{
		{name: "room", held: map[string]int64{"alice": 100 << 10}, wantStatus: http.StatusOK},
		{name: "room chunked", held: map[string]int64{"alice": 100 << 10}, chunked: true, wantStatus: http.StatusOK},
		{name: "principal full", held: map[string]int64{"alice": 200 << 10}, wantStatus: http.StatusTooManyRequests,
			wantRetry: "1", wantContains: VarMaxBodyBytesInFlightPerPrincipal},
		{name: "principal full chunked", held: map[string]int64{"alice": 200 << 10}, chunked: true, wantStatus: http.StatusTooManyRequests,
			wantRetry: "1", wantContains: VarMaxBodyBytesInFlightPerPrincipal},
		{name: "others do not count against alice's share", held: map[string]int64{"bob": 200 << 10}, wantStatus: http.StatusOK},
		{name: "total full", held: map[string]int64{"bob": 256 << 10, "carol": 100 << 10}, wantStatus: http.StatusServiceUnavailable,
			wantRetry: "1", wantContains: VarMaxBodyBytesInFlight},
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
			var got int
			h := bodyLimit(func(*http.Request) (int64, string) { return set.MaxBodyBytes, "" }, bodies,
				http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					b, _ := io.ReadAll(r.Body)
					got = len(b)
				}))
			var r io.Reader = strings.NewReader(strings.Repeat("x", body))
			if tc.chunked {
				r = io.MultiReader(r) // hides the length, as a chunked body has none
			}
			req := httptest.NewRequest(http.MethodPost, "/mcp", r)
			if tc.chunked {
				req.ContentLength = -1
			}
			req = req.WithContext(auth.WithPrincipal(req.Context(), auth.Static("alice")))
			w := httptest.NewRecorder()
			start := time.Now()
			h.ServeHTTP(w, req)
			if w.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.wantStatus, w.Body)
			}
			if tc.wantStatus != http.StatusOK {
				if waited := time.Since(start); waited < inFlightWait {
					t.Errorf("refused after %s, before waiting %s for room", waited, inFlightWait)
				}
				if w.Header().Get("Retry-After") != tc.wantRetry || !strings.Contains(w.Body.String(), tc.wantContains) ||
					!strings.Contains(w.Body.String(), `"jsonrpc":"2.0"`) {
					t.Errorf("refusal: Retry-After %q, body %s", w.Header().Get("Retry-After"), w.Body)
				}
			} else if got != body {
				t.Errorf("handler read %d bytes, want %d", got, body)
			}
			if held := heldBy(bodies, auth.Static("alice").String()); held != tc.held["alice"] {
				t.Errorf("alice holds %d bytes after the request, want the %d her other requests hold", held, tc.held["alice"])
			}
		})
	}
}

func heldBy(f *inFlight, principal string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.per[principal]; p != nil {
		return p.held
	}
	return 0
}
