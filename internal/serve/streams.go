package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// Streams are the requests that stay open for as long as the client likes: the standalone GET
// (SSE) stream of a 2025-11-25 session and the subscriptions/listen request of a 2026-07-28
// client. Each holds a connection, its goroutines and buffers, so they are bounded: one
// standalone stream per session (a second one gets 409 Conflict, as the transport allows; two
// would only compete for the session's messages) and MaxStreamsPerPrincipal of both kinds per
// principal (429 beyond). mcp-go bounds neither: one session opened 19,993 GET streams.

// stream records a GET stream of principal in session id; the session's end cancels it, and
// done gives its places back. A refusal says why it may not open.
func (s *Sessions) stream(ctx context.Context, id, principal string) (context.Context, func(), *refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.live[id]
	switch {
	case e == nil || e.principal != principal:
		return ctx, nil, &refusal{status: http.StatusNotFound, message: "session not found"}
	case len(e.streams) > 0:
		return ctx, nil, &refusal{status: http.StatusConflict, message: "this MCP session already has its standalone GET stream " +
			"open, and a session has one: keep using that one, or close it before opening another"}
	case s.streams[principal] >= s.set.MaxStreamsPerPrincipal:
		return ctx, nil, s.refuseStreams()
	}
	s.streams[principal]++
	e.lastSeen = s.now()
	ctx, cancel := context.WithCancel(ctx)
	s.nextKey++
	k := s.nextKey
	e.streams[k] = cancel
	return ctx, func() {
		cancel()
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(e.streams, k)
		s.unstreamLocked(principal)
	}, nil
}

// listen takes a place for a subscriptions/listen stream of principal (2026-07-28: no session).
func (s *Sessions) listen(principal string) (func(), *refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams[principal] >= s.set.MaxStreamsPerPrincipal {
		return nil, s.refuseStreams()
	}
	s.streams[principal]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.unstreamLocked(principal)
	}, nil
}

func (s *Sessions) unstreamLocked(principal string) {
	if s.streams[principal]--; s.streams[principal] <= 0 {
		delete(s.streams, principal)
	}
}

// Streams is how many streams are open now, for the metrics.
func (s *Sessions) Streams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.streams {
		n += c
	}
	return n
}

// refuseStreams asks for a retry in a few seconds: a stream's place comes back as soon as its
// client closes it.
func (s *Sessions) refuseStreams() *refusal {
	return &refusal{status: http.StatusTooManyRequests, retryAfter: 5, message: fmt.Sprintf(
		"too many open streams for this principal (standalone GET streams and subscriptions/listen requests): "+
			"the limit is %d (%s). Close streams you no longer read, or end sessions you no longer use (HTTP DELETE "+
			"with their Mcp-Session-Id), then retry.", s.set.MaxStreamsPerPrincipal, VarMaxStreamsPerPrincipal)}
}

// writePlain answers a request that is not JSON-RPC (a GET) with {"error": message}.
func (no *refusal) writePlain(w http.ResponseWriter) {
	no.header(w)
	writeJSON(w, no.status, map[string]string{"error": no.message})
}

// AdmitStream takes a stream's place for a request through a URL a tool handed out (/ports,
// /transfer), which stays open as long as its client likes (a readgate.Admit).
func (s *Sessions) AdmitStream(ctx context.Context) (func(), error) {
	release, no := s.listen(principalOf(ctx))
	if no != nil {
		return nil, errors.New(no.message)
	}
	return sync.OnceFunc(release), nil
}
