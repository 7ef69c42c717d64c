package serve

import (
	"errors"
	"net/http"

	"github.com/mark3labs/mcp-go/server"
)

var errUnknownSession = errors.New("unknown session")

// Context keys for what the HTTP layer hands to the session manager through the request.
type (
	reservationKey struct{}
	sweepKey       struct{}
)

// ResolveSessionIdManager implements server.SessionIdManagerResolver. mcp-go passes nil at
// shutdown, which may end any session; the sweeper's own requests may end only an expired one.
func (s *Sessions) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	if r == nil {
		return sessionManager{s: s, any: true}
	}
	if r.Context().Value(sweepKey{}) != nil {
		return sessionManager{s: s, any: true, sweep: true}
	}
	res, _ := r.Context().Value(reservationKey{}).(*reservation)
	return sessionManager{s: s, principal: principalOf(r.Context()), res: res}
}

type sessionManager struct {
	s         *Sessions
	principal string
	res       *reservation
	any       bool
	sweep     bool
}

func (m sessionManager) Generate() string { return m.s.open(m.principal, m.res) }

func (m sessionManager) Validate(id string) (bool, error) {
	if m.any || m.s.belongsTo(id, m.principal) {
		return false, nil
	}
	return false, errUnknownSession
}

// Terminate ends the session. It reports "not allowed" for another principal's session, and
// for the sweeper when the session became busy since it was found expired; mcp-go then keeps
// the session's state. An unknown (already ended) ID lets mcp-go clean up what it still holds.
func (m sessionManager) Terminate(id string) (bool, error) {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.live[id]
	if e == nil {
		return false, nil
	}
	var reason string
	switch {
	case m.sweep:
		if reason = s.expiredLocked(e, s.now()); reason == "" {
			return true, nil
		}
	case m.any:
		reason = reasonShutdown
	case e.principal != m.principal:
		return true, nil
	default:
		reason = reasonDeleted
	}
	s.endLocked(e, reason)
	return false, nil
}
