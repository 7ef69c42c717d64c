package serve

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
)

// CallLimit caps what runs at once per key (e.g. per principal) at n: tool calls, and the
// checks of requests through the URLs tools hand out (/ports, /transfer), which read the API
// as a call does. Beyond the cap a call or request is refused at once rather than queued: a
// queue would hold the request open with no feedback, and the client can retry once one
// returns. n <= 0 disables the limit.
type CallLimit struct {
	n        int
	mu       sync.Mutex
	inFlight map[string]int
}

// NewCallLimit makes a limit of n per key.
func NewCallLimit(n int) *CallLimit { return &CallLimit{n: n, inFlight: map[string]int{}} }

func (l *CallLimit) take(k string) (release func(), ok bool) {
	if l.n <= 0 {
		return func() {}, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight[k] >= l.n {
		return nil, false
	}
	l.inFlight[k]++
	return sync.OnceFunc(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.inFlight[k]--; l.inFlight[k] == 0 {
			delete(l.inFlight, k)
		}
	}), true
}

func (l *CallLimit) refusal() string {
	return fmt.Sprintf("too many concurrent calls for this principal (limit %d, %s; tool calls and requests "+
		"through /ports and /transfer URLs count alike); wait for one to finish", l.n, VarMaxConcurrentCalls)
}

// Tools is the tool middleware of the limit, keyed by key.
func (l *CallLimit) Tools(key func(ctx context.Context) string) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			release, ok := l.take(key(ctx))
			if !ok {
				return mcp.NewToolResultError(l.refusal()), nil
			}
			defer release()
			return next(ctx, req)
		}
	}
}

// Admit takes a place for an HTTP request's check (a readgate.Admit), keyed by CallerKey.
func (l *CallLimit) Admit(ctx context.Context) (func(), error) {
	release, ok := l.take(CallerKey(ctx))
	if !ok {
		return nil, errors.New(l.refusal())
	}
	return release, nil
}

// LimitConcurrency caps the tool calls in flight per key at n (a CallLimit of its own).
func LimitConcurrency(n int, key func(ctx context.Context) string) server.ToolHandlerMiddleware {
	return NewCallLimit(n).Tools(key)
}

// CallerKey is the key for the call limit over HTTP: the principal when authenticated, else
// the MCP session, else one shared bucket (2026-07-28 requests and URL requests without
// authentication).
func CallerKey(ctx context.Context) string {
	if p, ok := auth.PrincipalFrom(ctx); ok {
		return "principal:" + p.String()
	}
	if cs := server.ClientSessionFromContext(ctx); cs != nil && cs.SessionID() != "" {
		return "session:" + cs.SessionID()
	}
	return "anonymous"
}
