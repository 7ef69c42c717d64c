package serve

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Calls is the tool middleware that ties each call to its session: a call keeps the session
// from expiring while it runs, the session's end cancels it, and a call whose session ended
// answers so as an error (never as the success with empty output a cut-off call would give).
// Calls without a session (2026-07-28) pass through.
func (s *Sessions) Calls(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		cs := server.ClientSessionFromContext(ctx)
		if cs == nil || cs.SessionID() == "" {
			return next(ctx, req)
		}
		ctx, done, ok := s.beginCall(ctx, cs.SessionID())
		if !ok {
			return mcp.NewToolResultError(s.endedBefore(ctx)), nil
		}
		res, err := next(ctx, req)
		if reason, ended := done(); ended {
			return mcp.NewToolResultError(s.endedDuring(ctx, reason)), nil
		}
		return res, err
	}
}

func (s *Sessions) endedBefore(ctx context.Context) string {
	return "This MCP session has ended, so the call was not run. " + s.afterEnd(ctx)
}

func (s *Sessions) endedDuring(ctx context.Context, reason string) string {
	return fmt.Sprintf("This MCP session ended while the call ran (%s), so the call was stopped and its result is lost. %s", reason, s.afterEnd(ctx))
}

// afterEnd says what became of the sandboxes: an authenticated caller's belong to its
// principal and outlive the session; an anonymous session's go with it when the server
// releases them.
func (s *Sessions) afterEnd(ctx context.Context) string {
	if principalOf(ctx) != "" {
		return "Your sandboxes are kept: start a new session (initialize); list_sandboxes shows them."
	}
	if s.release {
		return "The session's sandboxes are deleted with it: start a new session (initialize) and create a new sandbox."
	}
	return "Start a new session (initialize) to continue."
}

// Hooks are the mcp-go hooks the registry needs; add others to the same value. A session that
// ended before mcp-go registered it (a DELETE racing the initialize answer) is dropped again
// at once, so an ended session is never left registered.
func (s *Sessions) Hooks() *server.Hooks {
	h := &server.Hooks{}
	h.AddOnRegisterSession(func(_ context.Context, cs server.ClientSession) {
		if id := cs.SessionID(); id != "" && !s.isLive(id) {
			s.drop(id)
		}
	})
	return h
}

// drop removes what mcp-go holds for an ended session.
func (s *Sessions) drop(id string) {
	s.mu.Lock()
	via := s.endVia
	s.mu.Unlock()
	if via != nil {
		via(id)
	}
}
