package serve

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
)

var errUnknownSession = errors.New("unknown session")

// sessions binds each Mcp-Session-Id to the principal that created it. A session ID is then
// no capability of its own: another principal presenting it gets 404, so it can neither
// listen to the session's stream nor DELETE it (which would run the owner's cleanup).
// It replaces mcp-go's InsecureStatefulSessionIdManager as the session ID manager.
type sessions struct {
	mu    sync.Mutex
	owner map[string]string // session ID -> source-qualified principal ("" without authentication)
}

func newSessions() *sessions { return &sessions{owner: map[string]string{}} }

func principalOf(ctx context.Context) string {
	p, _ := auth.PrincipalFrom(ctx)
	return p.String()
}

// ResolveSessionIdManager implements server.SessionIdManagerResolver. mcp-go passes nil for
// its own housekeeping (idle sweep, shutdown), which may end any session.
func (s *sessions) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	if r == nil {
		return sessionManager{s: s, any: true}
	}
	return sessionManager{s: s, principal: principalOf(r.Context())}
}

func (s *sessions) belongsTo(id, principal string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.owner[id]
	return ok && p == principal
}

// guard rejects GET and DELETE naming a session the caller does not own. mcp-go would
// otherwise let a GET create a session under a client-chosen ID. POSTs are checked by
// Validate (a POST initialize legitimately carries no or a stale ID).
func (s *sessions) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(server.HeaderKeySessionID)
		if id != "" && r.Method != http.MethodPost && !s.belongsTo(id, principalOf(r.Context())) {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "session not found"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

type sessionManager struct {
	s         *sessions
	principal string
	any       bool
}

func (m sessionManager) Generate() string {
	id := "mcp-session-" + rand.Text()
	m.s.mu.Lock()
	m.s.owner[id] = m.principal
	m.s.mu.Unlock()
	return id
}

func (m sessionManager) Validate(id string) (bool, error) {
	if m.any || m.s.belongsTo(id, m.principal) {
		return false, nil
	}
	return false, errUnknownSession
}

func (m sessionManager) Terminate(id string) (bool, error) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	p, ok := m.s.owner[id]
	if !ok {
		return false, nil
	}
	if !m.any && p != m.principal {
		return true, nil
	}
	delete(m.s.owner, id)
	return false, nil
}
