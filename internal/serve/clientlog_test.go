package serve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/logging"
)

// loggedServer is an MCP server whose logger mirrors to its clients, as app.go wires it; every
// session's owner is "me".
func loggedServer(t *testing.T) (*ClientLog, zerolog.Logger, *server.MCPServer) {
	t.Helper()
	cl := NewClientLog(0)
	h := &server.Hooks{}
	cl.Hooks(h, func(context.Context, string) string { return "me" })
	s := server.NewMCPServer("t", "0", server.WithLogging(), server.WithHooks(h))
	log, err := logging.New(io.Discard, "debug", "json", cl)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go cl.Run(ctx)
	return cl, log, s
}

// listen connects an in-process client in the protocol version given and, when level is
// set, asks for log messages at it; it returns the data of each notifications/message.
func listen(t *testing.T, s *server.MCPServer, version string, level mcp.LoggingLevel) <-chan map[string]any {
	t.Helper()
	c, err := mcpclient.NewInProcessClient(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	got := make(chan map[string]any, 64)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != "notifications/message" {
			return
		}
		var p struct { // the client's view: what went over the wire
			Level  mcp.LoggingLevel `json:"level"`
			Logger string           `json:"logger"`
			Data   map[string]any   `json:"data"`
		}
		b, _ := json.Marshal(n.Params)
		_ = json.Unmarshal(b, &p)
		if p.Logger != clientLogLogger {
			t.Errorf("logger %q", p.Logger)
		}
		p.Data["level"] = string(p.Level)
		got <- p.Data
	})
	ctx := t.Context()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = version
	req.Params.ClientInfo = mcp.Implementation{Name: "t", Version: "0"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	if level != "" {
		set := mcp.SetLevelRequest{}
		set.Params.Level = level
		if err := c.SetLevel(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// until collects the messages a client gets up to the one saying end (an error, so every
// level a test sets admits it); Run delivers in order, so all lines logged before end are in.
func until(t *testing.T, got <-chan map[string]any, end string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for {
		select {
		case d := <-got:
			if d["message"] == end {
				return out
			}
			out = append(out, d)
		case <-time.After(10 * time.Second):
			t.Fatalf("no %q message; got %v", end, out)
		}
	}
}

func messages(ds []map[string]any) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d["level"].(string)+" "+d["message"].(string))
	}
	return out
}

func TestClientLogFollowsSetLevel(t *testing.T) {
	lines := func(log zerolog.Logger) {
		logging.ForClients(log.Info()).Msg("info")
		logging.ForClients(log.Warn()).Msg("warn")
		logging.ForClients(log.Warn()).Msg("warn") // a repeat within a minute is not sent again
		log.Warn().Msg("not marked: stays on stderr")
		logging.ForClients(log.Warn()).Str(logging.OwnerField, "someone-else").Msg("another owner's")
		logging.ForClients(log.Warn()).Str(logging.OwnerField, "me").Msg("mine")
		logging.ForClients(log.Warn()).Str(logging.SessionField, "another-session").Msg("another session's")
		logging.ForClients(log.Error()).Msg("error")
	}
	cases := []struct {
		level mcp.LoggingLevel
		want  []string
	}{
		{mcp.LoggingLevelDebug, []string{"warning warn", "warning mine", "error error"}},
		{mcp.LoggingLevelWarning, []string{"warning warn", "warning mine", "error error"}},
		{mcp.LoggingLevelError, []string{"error error"}},
		{mcp.LoggingLevelCritical, nil},
	}
	for _, tc := range cases {
		t.Run(string(tc.level), func(t *testing.T) {
			_, log, s := loggedServer(t)
			got := listen(t, s, mcp.LATEST_LEGACY_PROTOCOL_VERSION, tc.level)
			lines(log)
			logging.ForClients(log.WithLevel(zerolog.PanicLevel)).Msg("end") // emergency: every level admits it
			if msgs := messages(until(t, got, "end")); !slices.Equal(msgs, tc.want) {
				t.Errorf("got %q, want %q", msgs, tc.want)
			}
		})
	}
}

// Secrets and command output never reach a client: fields outside clientFields stay on
// stderr, and what looks like a credential in the rest is redacted.
func TestClientLogRedacts(t *testing.T) {
	_, log, s := loggedServer(t)
	got := listen(t, s, mcp.LATEST_LEGACY_PROTOCOL_VERSION, mcp.LoggingLevelWarning)
	secrets := []string{"alice:pw", "abcdefghijklmnop", "s3cr3tvalue", "hunter2", "eyJhbGciOiJIUzI1NiJ9", "Zm9vOmJhcg", "command output"}
	logging.ForClients(log.Warn()).
		Err(errors.New(`GET https://alice:pw@api.example/x: header "Authorization: Bearer abcdefghijklmnop"`)).
		Str("stdout", "command output").Str("env", "hunter2").Str("principal", "static:alice").Str("claim", "c1").
		Msg("token=s3cr3tvalue, env API_KEY=hunter2, jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln, basic Zm9vOmJhcg==")
	logging.ForClients(log.Error()).Msg("end")
	ds := until(t, got, "end")
	if len(ds) != 1 {
		t.Fatalf("got %v", ds)
	}
	b, _ := json.Marshal(ds[0])
	for _, s := range secrets {
		if strings.Contains(string(b), s) {
			t.Errorf("%q reached the client: %s", s, b)
		}
	}
	if ds[0]["claim"] != "c1" || ds[0]["principal"] != nil || !strings.Contains(ds[0]["error"].(string), redacted) {
		t.Errorf("fields: %s", b)
	}
}

func TestRedact(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Authorization: Bearer abcdefghijklmnop", "Authorization: [redacted] [redacted]"},
		{"rejected bearer token", "rejected bearer token"},
		{"https://u:p@host/path", "https://[redacted]@host/path"},
		{`{"access_token":"xyz"}`, `{"access_token":[redacted]}`},
		{"password: hunter2", "password: [redacted]"},
		{"run with FOO=bar BAZ='a b'", "run with FOO=[redacted] BAZ=[redacted]"},
		{"id eyJa.eyJb.c", "id [redacted]"},
		{"sandbox claim \"x\" in namespace \"y\" expired", "sandbox claim \"x\" in namespace \"y\" expired"},
		{strings.Repeat("é", maxClientText), strings.Repeat("é", maxClientText/2) + "…"},
	}
	for _, tc := range cases {
		if got := redact(tc.in); got != tc.want {
			t.Errorf("redact(%.40q) = %.60q, want %.60q", tc.in, got, tc.want)
		}
	}
}

// A line for every session logged before a client asked reaches it when it asks (the
// start-up API check runs before any client), once; one for an owner does not.
func TestClientLogReplaysServerWideLines(t *testing.T) {
	cl, log, s := loggedServer(t)
	logging.ForClients(log.Warn()).Msg("API down")
	logging.ForClients(log.Warn()).Str(logging.OwnerField, "me").Msg("mine, before I asked")
	for deadline := time.Now().Add(10 * time.Second); ; {
		cl.mu.Lock()
		n := len(cl.recent)
		cl.mu.Unlock()
		if n == 1 && len(cl.queue) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lines were not processed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	got := listen(t, s, mcp.LATEST_LEGACY_PROTOCOL_VERSION, mcp.LoggingLevelWarning)
	logging.ForClients(log.Error()).Msg("end")
	if msgs := messages(until(t, got, "end")); !slices.Equal(msgs, []string{"warning API down"}) {
		t.Errorf("got %q", msgs)
	}
}

// The 2026-07-28 protocol has no logging/setLevel: such a client never becomes a listener,
// so nothing is sent to it unasked, while a 2025-11-25 client on the same server hears.
func TestClientLogLeavesModernClientsAlone(t *testing.T) {
	cl, log, s := loggedServer(t)
	modern := listen(t, s, mcp.LATEST_PROTOCOL_VERSION, mcp.LoggingLevelDebug) // kept by the client only
	legacy := listen(t, s, mcp.LATEST_LEGACY_PROTOCOL_VERSION, mcp.LoggingLevelWarning)
	logging.ForClients(log.Error()).Msg("end")
	until(t, legacy, "end")
	cl.mu.Lock()
	n := len(cl.listeners)
	cl.mu.Unlock()
	if n != 1 || len(modern) != 0 {
		t.Errorf("%d listeners, %d messages to the modern client", n, len(modern))
	}
}

// Logging never waits on delivery: a full queue drops lines.
func TestClientLogNeverBlocks(t *testing.T) {
	cl := NewClientLog(1) // and nothing runs it
	log, err := logging.New(io.Discard, "info", "json", cl)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 3 {
			logging.ForClients(log.Warn()).Msg("x")
		}
		log.Warn().Msg("not marked: not queued")
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("logging blocked")
	}
	if cl.Dropped() != 2 {
		t.Errorf("dropped %d, want 2", cl.Dropped())
	}
}
