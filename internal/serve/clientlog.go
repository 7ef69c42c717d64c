package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"
	utilcache "k8s.io/apimachinery/pkg/util/cache"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/logging"
)

const (
	// DefaultClientLogQueue bounds the lines waiting for delivery; past it new ones are dropped.
	DefaultClientLogQueue = 256
	// clientLogReplay lines for every client are kept for sessions that ask later, for at
	// most clientLogReplayAge: the start-up check's warning comes before any client asks.
	clientLogReplay    = 8
	clientLogReplayAge = 10 * time.Minute
	// clientLogRepeat: the same line for the same recipients goes out once in this long (a
	// readiness probe fails every few seconds while the API is down).
	clientLogRepeat = time.Minute
	// clientLogLogger names the server as the logger of every notifications/message.
	clientLogLogger = "k8s-sandbox-mcp"
)

// clientFields are the fields a client may read, besides the message; every other field of a
// line (owners, principals, remote addresses, anything a future log site adds) stays on stderr.
var clientFields = []string{zerolog.ErrorFieldName, "claim", "namespace", "tool", "cause", "retry_may_help", "shutdown_time"}

var clientMarker = []byte(`"` + logging.ClientsField + `":true`)

// OwnerOf names the sandbox owner whose lines an MCP session hears, from a request of it.
type OwnerOf func(ctx context.Context, sessionID string) string

// ClientLog sends the server's log lines marked logging.ForClients to the MCP sessions they
// concern as notifications/message: a line with an owner to the sessions of that owner, one
// with a session to that session, any other to every session. Only sessions that asked
// (logging/setLevel, the 2025-11-25 protocol) hear anything, at or above the level they
// asked for: the 2026-07-28 protocol has no setLevel and gets no unsolicited messages.
//
// It is a zerolog.LevelWriter (a tee of logging.New): writing only copies a marked warning or
// error into a bounded queue, dropping it when the queue is full, so logging never waits on
// a client; Run parses and delivers, and mcp-go's sends never block either.
type ClientLog struct {
	queue   chan []byte
	dropped atomic.Uint64
	now     func() time.Time

	mu        sync.Mutex
	listeners map[string]listener // by session ID: the sessions that asked
	recent    []clientLine        // the latest lines for every session, for those that ask later
	// sent holds session and line of what went out within clientLogRepeat, in apimachinery's
	// LRU expiring cache (as kube's renewals and cache misses do): bounded, oldest out first.
	sent *utilcache.LRUExpireCache
}

type listener struct {
	srv   *server.MCPServer
	owner string
	level mcp.LoggingLevel
}

type clientLine struct {
	at             time.Time
	owner, session string
	n              mcp.LoggingMessageNotification
}

// NewClientLog returns a ClientLog whose queue holds size lines (DefaultClientLogQueue if 0).
func NewClientLog(size int) *ClientLog {
	if size <= 0 {
		size = DefaultClientLogQueue
	}
	return &ClientLog{queue: make(chan []byte, size), now: time.Now, listeners: map[string]listener{},
		sent: utilcache.NewLRUExpireCache(4 * DefaultClientLogQueue)}
}

// WriteLevel queues a marked warning or error, or drops it when the queue is full.
func (c *ClientLog) WriteLevel(l zerolog.Level, p []byte) (int, error) {
	if l < zerolog.WarnLevel || l > zerolog.PanicLevel || !bytes.Contains(p, clientMarker) {
		return len(p), nil
	}
	select {
	case c.queue <- bytes.Clone(p): // zerolog reuses p once this returns
	default:
		c.dropped.Add(1)
	}
	return len(p), nil
}

// Write takes the lines without a level, which are never for clients.
func (c *ClientLog) Write(p []byte) (int, error) { return len(p), nil }

// Dropped counts the lines the full queue turned away.
func (c *ClientLog) Dropped() uint64 { return c.dropped.Load() }

// Run delivers the queued lines until ctx ends.
func (c *ClientLog) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-c.queue:
			if line, ok := c.parse(p); ok {
				c.deliver(line)
			}
		}
	}
}

// Hooks installs on h what makes sessions listeners: logging/setLevel adds the session (and
// replays the recent lines for every session that its new level admits and its old one did
// not), its end removes it.
func (c *ClientLog) Hooks(h *server.Hooks, ownerOf OwnerOf) {
	h.AddAfterSetLevel(func(ctx context.Context, _ any, req *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
		cs, srv := server.ClientSessionFromContext(ctx), server.ServerFromContext(ctx)
		if cs == nil || cs.SessionID() == "" || srv == nil || req == nil {
			return
		}
		id, level := cs.SessionID(), req.Params.Level
		c.mu.Lock()
		old := c.listeners[id].level // "" admits nothing
		c.listeners[id] = listener{srv: srv, owner: ownerOf(ctx, id), level: level}
		var replay []mcp.LoggingMessageNotification
		for _, l := range c.recent {
			lv := l.n.Params.Level
			if c.now().Sub(l.at) < clientLogReplayAge && lv.ShouldSendTo(level) && !lv.ShouldSendTo(old) {
				replay = append(replay, l.n)
			}
		}
		c.mu.Unlock()
		for _, n := range replay {
			_ = srv.SendLogMessageToSpecificClient(id, n)
		}
	})
	h.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		c.mu.Lock()
		delete(c.listeners, cs.SessionID())
		c.mu.Unlock()
	})
}

// parse turns a JSON log line into the notification a client gets: the message and the
// fields of clientFields, secrets redacted, nothing else.
func (c *ClientLog) parse(p []byte) (clientLine, bool) {
	var m map[string]any
	if err := json.Unmarshal(p, &m); err != nil {
		return clientLine{}, false
	}
	level, ok := mcpLevel(m[zerolog.LevelFieldName])
	if !ok {
		return clientLine{}, false
	}
	msg, _ := m[zerolog.MessageFieldName].(string)
	data := map[string]any{"message": redact(msg)}
	for _, k := range clientFields {
		switch v := m[k].(type) {
		case string:
			data[k] = redact(v)
		case bool, float64:
			data[k] = v
		}
	}
	owner, _ := m[logging.OwnerField].(string)
	session, _ := m[logging.SessionField].(string)
	return clientLine{at: c.now(), owner: owner, session: session,
		n: mcp.NewLoggingMessageNotification(level, clientLogLogger, data)}, true
}

func mcpLevel(v any) (mcp.LoggingLevel, bool) {
	s, _ := v.(string)
	l, err := zerolog.ParseLevel(s)
	switch {
	case err != nil:
		return "", false
	case l == zerolog.WarnLevel:
		return mcp.LoggingLevelWarning, true
	case l == zerolog.ErrorLevel:
		return mcp.LoggingLevelError, true
	case l == zerolog.FatalLevel:
		return mcp.LoggingLevelCritical, true
	case l == zerolog.PanicLevel:
		return mcp.LoggingLevelEmergency, true
	}
	return "", false
}

func (c *ClientLog) deliver(l clientLine) {
	c.mu.Lock()
	to := c.targets(l)
	if l.owner == "" && l.session == "" {
		c.recent = append(c.recent, l)
		if len(c.recent) > clientLogReplay {
			c.recent = c.recent[len(c.recent)-clientLogReplay:]
		}
	}
	c.mu.Unlock()
	for id, srv := range to {
		_ = srv.SendLogMessageToSpecificClient(id, l.n) // never blocks; a full session misses it
	}
}

// targets are the listeners l concerns, less those that had the same line within
// clientLogRepeat. c.mu is held.
func (c *ClientLog) targets(l clientLine) map[string]*server.MCPServer {
	to := map[string]*server.MCPServer{}
	text, _ := json.Marshal(l.n.Params)
	for id, ls := range c.listeners {
		switch {
		case l.session != "" && id != l.session:
		case l.session == "" && l.owner != "" && ls.owner != l.owner:
		default:
			key := id + "\x00" + string(text)
			if _, ok := c.sent.Get(key); ok {
				continue
			}
			c.sent.Add(key, struct{}{}, clientLogRepeat)
			to[id] = ls.srv
		}
	}
	return to
}
