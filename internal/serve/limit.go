package serve

import (
	"context"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
)

// LimitConcurrency caps the tool calls in flight per key (e.g. per principal) at n. A call
// beyond the cap is refused at once with an isError result rather than queued: a queue would
// hold the HTTP request open with no feedback, and the model can retry once a call returns.
// n <= 0 disables the limit.
func LimitConcurrency(n int, key func(ctx context.Context) string) server.ToolHandlerMiddleware {
	var mu sync.Mutex
	inFlight := map[string]int{}
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		if n <= 0 {
			return next
		}
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			k := key(ctx)
			mu.Lock()
			if inFlight[k] >= n {
				mu.Unlock()
				return mcp.NewToolResultError(fmt.Sprintf("too many concurrent calls for this principal (limit %d); wait for one to finish", n)), nil
			}
			inFlight[k]++
			mu.Unlock()
			defer func() {
				mu.Lock()
				if inFlight[k]--; inFlight[k] == 0 {
					delete(inFlight, k)
				}
				mu.Unlock()
			}()
			return next(ctx, req)
		}
	}
}

// CallerKey is the key for LimitConcurrency over HTTP: the principal when authenticated, else
// the MCP session, else one shared bucket (2026-07-28 requests without authentication).
func CallerKey(ctx context.Context) string {
	if p, ok := auth.PrincipalFrom(ctx); ok {
		return "principal:" + p.String()
	}
	if cs := server.ClientSessionFromContext(ctx); cs != nil && cs.SessionID() != "" {
		return "session:" + cs.SessionID()
	}
	return "anonymous"
}
