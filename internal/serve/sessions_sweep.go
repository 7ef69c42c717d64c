package serve

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// Why a session ended, as the calls it stopped report it.
const (
	reasonDeleted  = "the client ended it with HTTP DELETE"
	reasonShutdown = "the server is shutting down"
)

// expiredLocked says why e has expired, or "" if it has not. A session with a request or call
// in flight is never idle, however long the call runs.
func (s *Sessions) expiredLocked(e *session, now time.Time) string {
	if e.posts > 0 || len(e.calls) > 0 {
		return ""
	}
	if ttl := s.unusedTTL(); !e.used && now.Sub(e.created) >= ttl {
		return fmt.Sprintf("it made no call within %s of initialize", ttl)
	}
	if s.idleTTL > 0 && now.Sub(e.lastSeen) >= s.idleTTL {
		return fmt.Sprintf("it was idle for %s", s.idleTTL)
	}
	return ""
}

// sweepEvery paces the sweeper: a quarter of the shortest TTL, within [100 ms, 15 s].
func (s *Sessions) sweepEvery() time.Duration {
	ttl := s.unusedTTL()
	return min(max(ttl/4, 100*time.Millisecond), 15*time.Second)
}

// sweep ends every expired session.
func (s *Sessions) sweep() {
	now := s.now()
	s.mu.Lock()
	var expired []string
	for id, e := range s.live {
		if s.expiredLocked(e, now) != "" {
			expired = append(expired, id)
		}
	}
	s.mu.Unlock()
	for _, id := range expired {
		s.end(id)
	}
}

// end ends session id through mcp-go when attached (its Terminate re-checks the expiry).
func (s *Sessions) end(id string) {
	s.mu.Lock()
	via := s.endVia
	if via == nil {
		if e := s.live[id]; e != nil {
			if reason := s.expiredLocked(e, s.now()); reason != "" {
				s.endLocked(e, reason)
			}
		}
	}
	s.mu.Unlock()
	if via != nil {
		via(id)
	}
}

func (s *Sessions) runSweeper(ctx context.Context) {
	t := time.NewTicker(s.sweepEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sweep()
		}
	}
}

// attach makes mcp-go's handler the way sessions end, so the transport state it keeps per
// session (registration, streams, log levels) goes with them. The request is the sweeper's
// own DELETE, which only the manager it resolves to may act on.
func (s *Sessions) attach(h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endVia = func(id string) {
		ctx := context.WithValue(context.Background(), sweepKey{}, true)
		r, err := http.NewRequestWithContext(ctx, http.MethodDelete, "http://sweeper/mcp", nil)
		if err != nil {
			return
		}
		r.Header.Set(server.HeaderKeySessionID, id)
		h.ServeHTTP(discard{}, r)
	}
}

// discard is a ResponseWriter for the sweeper's DELETE, whose answer nobody reads.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
