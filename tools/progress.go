package tools

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// progress sends notifications/progress for one request, only when the client asked for
// them with a progressToken; the counter always increases, as the spec requires.
type progress struct {
	ctx   context.Context
	srv   *server.MCPServer
	token mcp.ProgressToken
	mu    sync.Mutex
	n     int
	done  bool
}

// progressKey holds the call's one progress in its context (withProgress).
type progressKey struct{}

// withProgress gives the call one progress counter, shared by everything in it that reports
// (an auto-resume in resolve, then the tool's own heartbeats): two counters would both start
// at 1, and the spec wants one that always increases.
func withProgress(ctx context.Context, req mcp.CallToolRequest) context.Context {
	return context.WithValue(ctx, progressKey{}, newProgress(ctx, req))
}

// callProgress is the call's progress; nil (which sends nothing) outside a tool call.
func callProgress(ctx context.Context) *progress {
	p, _ := ctx.Value(progressKey{}).(*progress)
	return p
}

func newProgress(ctx context.Context, req mcp.CallToolRequest) *progress {
	if p := callProgress(ctx); p != nil {
		return p
	}
	p := &progress{ctx: ctx, srv: server.ServerFromContext(ctx)}
	if req.Params.Meta != nil {
		p.token = req.Params.Meta.ProgressToken
	}
	return p
}

func (p *progress) enabled() bool { return p != nil && p.token != nil && p.srv != nil }

func (p *progress) send(message string) {
	if !p.enabled() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.n++
	params := map[string]any{"progressToken": p.token, "progress": p.n}
	if message != "" {
		params["message"] = message
	}
	_ = p.srv.SendNotificationToClient(p.ctx, "notifications/progress", params)
}

// finish stops further notifications: none may follow the result.
func (p *progress) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
}
