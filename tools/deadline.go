package tools

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// A result on a sandbox that is about to go says so, beside the structured result: users
// report sandboxes deleted mid-task with no warning, and a model that knows can extend it or
// copy its work out first.
const (
	// deadlineNoticeWithin: a sandbox deleted sooner than this after the call, which use or
	// extend_sandbox can still postpone.
	deadlineNoticeWithin = 2 * time.Minute
	// capNoticeWithin: the hard cap from creation, which nothing postpones, is nearer than this.
	capNoticeWithin = 10 * time.Minute
)

type deadlineKey struct{}

// deadlineSlot carries, through one call, the deadline of the sandbox the call resolved.
type deadlineSlot struct {
	mu   sync.Mutex
	name string
	at   kube.Deadline
}

// noteDeadline records the deadline of the sandbox a call works on (resolve calls it).
func noteDeadline(ctx context.Context, c kube.Claim) {
	if s, ok := ctx.Value(deadlineKey{}).(*deadlineSlot); ok {
		s.mu.Lock()
		s.name, s.at = c.Name, c.Deadline
		s.mu.Unlock()
	}
}

// deadlineNotes adds the note to a successful result on a sandbox whose deadline is near.
func deadlineNotes(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		slot := &deadlineSlot{}
		res, err := next(context.WithValue(ctx, deadlineKey{}, slot), req)
		if err != nil || res == nil || res.IsError {
			return res, err
		}
		slot.mu.Lock()
		note := deadlineNote(slot.name, slot.at, time.Now())
		slot.mu.Unlock()
		if note != "" {
			res.Content = append(res.Content, mcp.NewTextContent(note))
		}
		return res, err
	}
}

// deadlineNote is the note for sandbox name going at d, or "" when that is not near.
func deadlineNote(name string, d kube.Deadline, now time.Time) string {
	in := func(t time.Time) string {
		return fmt.Sprintf("%s (in %s)", t.UTC().Format(time.RFC3339), max(t.Sub(now), 0).Round(time.Second))
	}
	switch {
	case !d.Cap.IsZero() && d.Cap.Sub(now) < capNoticeWithin && (d.At.IsZero() || !d.At.Before(d.Cap.Add(-time.Minute))):
		return fmt.Sprintf("Note: sandbox %q reaches its lifetime cap at %s and is then deleted with its files; "+
			"neither use nor extend_sandbox can move that. Copy out what you need before then (download_file, download_archive), "+
			"or create a new sandbox to go on.", name, in(d.Cap))
	case !d.At.IsZero() && d.At.Sub(now) < deadlineNoticeWithin:
		return fmt.Sprintf("Note: sandbox %q is deleted with its files at %s unless it is used again or extended: "+
			"call extend_sandbox to keep it longer.", name, in(d.At))
	}
	return ""
}
