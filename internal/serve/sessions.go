package serve

import (
	"context"
	"crypto/rand"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
)

// drainTimeout bounds how long an ended session waits for its cancelled calls to return
// before OnEnd runs anyway (the janitor still catches a create that finishes later).
const drainTimeout = 60 * time.Second

// SessionOptions configure the MCP sessions of the HTTP transport.
type SessionOptions struct {
	Settings HTTPSettings // the session bounds; zero fields take defaults
	// IdleTTL ends a session that sent nothing for this long while no call of it ran; 0 never.
	IdleTTL time.Duration
	Log     zerolog.Logger
	// OnEnd runs once for every ended session, after the calls it had in flight returned:
	// release what the session owned.
	OnEnd func(sessionID, reason string)
	// ReleasesSandboxes says whether OnEnd deletes the session's sandboxes, for the message
	// a call of an ended session gets.
	ReleasesSandboxes bool
}

// Sessions owns the life of every MCP session over HTTP: the principal that opened it, the
// bounds per principal and in total, the requests and tool calls running in it, and its end.
// A session ends exactly once (client DELETE, expiry, shutdown); from then on it is never
// valid or registered again, its running calls are cancelled and answer that the session
// ended, and OnEnd runs once they have returned. It is mcp-go's SessionIdManager (a session
// ID is then no capability of its own: another principal presenting it gets 404) and replaces
// mcp-go's idle sweeper, which counts a session with a call in flight as idle.
type Sessions struct {
	set     HTTPSettings
	idleTTL time.Duration
	log     zerolog.Logger
	onEnd   func(id, reason string)
	release bool
	now     func() time.Time
	bodies  *inFlight // the request bytes in flight, taken by bodyLimit

	mu           sync.Mutex
	live         map[string]*session
	perPrincipal map[string]int // live sessions plus reservations, by principal
	streams      map[string]int // open streams (streams.go), by principal
	total        int
	closed       bool
	nextKey      uint64
	endVia       func(id string) // ends a session through mcp-go, so its state there goes too
	ending       sync.WaitGroup
}

type session struct {
	id, principal     string
	created, lastSeen time.Time
	used              bool // made a call beyond the handshake
	posts             int  // POSTs in flight
	calls             map[uint64]context.CancelFunc
	streams           map[uint64]context.CancelFunc // GET streams
	ended             bool
	reason            string
	drained           chan struct{} // made at the end; closed once no call runs
}

// NewSessions returns an empty registry.
func NewSessions(o SessionOptions) *Sessions {
	set := o.Settings.withDefaults()
	return &Sessions{set: set, bodies: newInFlight(set), idleTTL: o.IdleTTL, log: o.Log, onEnd: o.OnEnd,
		release: o.ReleasesSandboxes, now: time.Now, live: map[string]*session{}, perPrincipal: map[string]int{}, streams: map[string]int{}}
}

func principalOf(ctx context.Context) string {
	p, _ := auth.PrincipalFrom(ctx)
	return p.String()
}

// unusedTTL is when a session that made no call ends: the setting, never later than idleTTL.
func (s *Sessions) unusedTTL() time.Duration {
	if s.idleTTL > 0 && s.idleTTL < s.set.UnusedSessionTTL {
		return s.idleTTL
	}
	return s.set.UnusedSessionTTL
}

// reservation holds a place under the bounds for an initialize until it has its session.
type reservation struct {
	principal string
	taken     bool // guarded by Sessions.mu
}

func (s *Sessions) reserve(principal string) (*reservation, *refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, refuseShutdown()
	case s.perPrincipal[principal] >= s.set.MaxSessionsPerPrincipal:
		return nil, s.refusePerPrincipal()
	case s.total >= s.set.MaxSessions:
		return nil, s.refuseTotal()
	}
	s.perPrincipal[principal]++
	s.total++
	return &reservation{principal: principal}, nil
}

// Open is how many MCP sessions are open (or being opened) now.
func (s *Sessions) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// unreserve gives the place back unless a session took it.
func (s *Sessions) unreserve(r *reservation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !r.taken {
		r.taken = true
		s.dropLocked(r.principal)
	}
}

func (s *Sessions) dropLocked(principal string) {
	s.total--
	if s.perPrincipal[principal]--; s.perPrincipal[principal] <= 0 {
		delete(s.perPrincipal, principal)
	}
}

// open registers a new session ID for principal, in the place r reserved.
func (s *Sessions) open(principal string, r *reservation) string {
	id := "mcp-session-" + rand.Text()
	s.mu.Lock()
	defer s.mu.Unlock()
	if r == nil || r.taken {
		// Not reserved by the guard (mcp-go found an initialize it did not): count it all the same.
		s.perPrincipal[principal]++
		s.total++
	}
	if r != nil {
		r.taken = true
	}
	now := s.now()
	s.live[id] = &session{id: id, principal: principal, created: now, lastSeen: now,
		calls: map[uint64]context.CancelFunc{}, streams: map[uint64]context.CancelFunc{}}
	return id
}

func (s *Sessions) belongsTo(id, principal string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.live[id]
	return ok && e.principal == principal
}

func (s *Sessions) isLive(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[id] != nil
}

// enter records a POST of principal in session id (used: it is more than the handshake);
// leave records its end. It reports false when id is not principal's live session.
func (s *Sessions) enter(id, principal string, used bool) (leave func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.live[id]
	if e == nil || e.principal != principal {
		return nil, false
	}
	e.posts++
	e.lastSeen = s.now()
	e.used = e.used || used
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		e.posts--
		e.lastSeen = s.now()
	}, true
}

// beginCall records a tool call in session id and returns its context, which the session's
// end cancels; done reports whether the session ended meanwhile, and why. ok is false when
// the session has ended already.
func (s *Sessions) beginCall(ctx context.Context, id string) (_ context.Context, done func() (reason string, ended bool), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.live[id]
	if e == nil {
		return ctx, nil, false
	}
	e.used = true
	ctx, cancel := context.WithCancel(ctx)
	s.nextKey++
	k := s.nextKey
	e.calls[k] = cancel
	return ctx, func() (string, bool) {
		cancel()
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(e.calls, k)
		e.lastSeen = s.now()
		if e.ended && len(e.calls) == 0 {
			close(e.drained)
		}
		return e.reason, e.ended
	}, true
}

// endLocked ends e: no longer valid, its calls and streams cancelled, OnEnd once they are done.
func (s *Sessions) endLocked(e *session, reason string) {
	delete(s.live, e.id)
	s.dropLocked(e.principal)
	e.ended, e.reason = true, reason
	for _, cancel := range e.calls {
		cancel()
	}
	for _, cancel := range e.streams {
		cancel()
	}
	e.drained = make(chan struct{})
	if len(e.calls) == 0 {
		close(e.drained)
	}
	s.ending.Add(1)
	go s.finish(e)
}

func (s *Sessions) finish(e *session) {
	defer s.ending.Done()
	t := time.NewTimer(drainTimeout)
	defer t.Stop()
	select {
	case <-e.drained:
	case <-t.C:
		s.log.Warn().Str("session", e.id).Msg("calls of an ended session still run after the drain timeout; releasing anyway")
	}
	s.log.Info().Str("session", e.id).Str("reason", e.reason).Msg("MCP session ended")
	if s.onEnd != nil {
		s.onEnd(e.id, e.reason)
	}
}

// Wait blocks until every ended session's OnEnd has returned, or ctx ends.
func (s *Sessions) Wait(ctx context.Context) {
	done := make(chan struct{})
	go func() { s.ending.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// close refuses new sessions and ends every live one (the server is shutting down).
func (s *Sessions) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, e := range s.live {
		s.endLocked(e, reasonShutdown)
	}
}
