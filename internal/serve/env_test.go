package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth/authtest"
)

const (
	tokAlice = "alice-token-0123456789"
	tokBob   = "bob-token-abcdefghijkl"
	resource = "https://mcp.example.com/mcp"
)

// env is the real HTTP server (serve.HTTP on a loopback port) in front of a real mcp-go
// server holding trivial tools that report what they see.
type env struct {
	base    string
	issuer  *authtest.Issuer
	release chan struct{} // closing it lets every "block" call return
	started chan string   // "block" sends its principal once running

	sessions *Sessions
	srv      *server.MCPServer
	lingered chan struct{} // closed when a cancelled "linger" call has returned

	mu           sync.Mutex
	unregistered []string          // session IDs whose unregister hook ran
	ended        map[string]string // session ID -> reason, from OnEnd
}

type envOpts struct {
	settings HTTPSettings
	noAuth   bool
	idleTTL  time.Duration // default a minute
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	e := &env{release: make(chan struct{}), started: make(chan string, 16), ended: map[string]string{}, lingered: make(chan struct{})}
	if o.idleTTL == 0 {
		o.idleTTL = time.Minute
	}
	e.sessions = NewSessions(SessionOptions{Settings: o.settings, IdleTTL: o.idleTTL, Log: zerolog.Nop(), ReleasesSandboxes: true,
		OnEnd: func(id, reason string) {
			select {
			case <-e.lingered:
				reason += " (after the linger call returned)"
			default:
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			e.ended[id] = reason
		}})
	hooks := e.sessions.Hooks()
	hooks.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) {
		e.mu.Lock()
		e.unregistered = append(e.unregistered, s.SessionID())
		e.mu.Unlock()
	})
	set := o.settings.withDefaults()
	s := server.NewMCPServer("test", "1", server.WithToolCapabilities(false), server.WithHooks(hooks),
		server.WithToolHandlerMiddleware(e.sessions.Calls),
		server.WithToolHandlerMiddleware(LimitConcurrency(set.MaxConcurrentCalls, CallerKey)))
	s.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p, _ := auth.PrincipalFrom(ctx)
		sid := ""
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			sid = cs.SessionID()
		}
		return mcp.NewToolResultText(p.Name() + "|" + sid), nil
	})
	s.AddTool(mcp.NewTool("headers"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("authorization=" + req.Header.Get("Authorization")), nil
	})
	s.AddTool(mcp.NewTool("size", mcp.WithString("data")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(fmt.Sprint(len(req.GetString("data", "")))), nil
	})
	s.AddTool(mcp.NewTool("block"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p, _ := auth.PrincipalFrom(ctx)
		e.started <- p.Name()
		select {
		case <-e.release:
			return mcp.NewToolResultText("released"), nil
		case <-ctx.Done():
			return mcp.NewToolResultError("cancelled"), nil
		}
	})
	// linger takes a while to stop once cancelled, like a create deleting its claim.
	s.AddTool(mcp.NewTool("linger"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		e.started <- "linger"
		<-ctx.Done()
		time.Sleep(300 * time.Millisecond)
		close(e.lingered)
		return mcp.NewToolResultText("linger saw: " + ctx.Err().Error()), nil
	})
	s.AddTool(mcp.NewTool("sleep", mcp.WithNumber("ms")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-time.After(time.Duration(req.GetFloat("ms", 0)) * time.Millisecond):
			return mcp.NewToolResultText("slept"), nil
		case <-ctx.Done():
			return mcp.NewToolResultError("cancelled: " + ctx.Err().Error()), nil
		}
	})

	e.srv = s
	opts := HTTPOptions{Addr: "127.0.0.1:0", Log: zerolog.Nop(), Settings: o.settings, Sessions: e.sessions,
		Health: &Health{Prober: okProber{}, Namespace: "default", Log: zerolog.Nop()}}
	opts.Health.MarkReady()
	if !o.noAuth {
		e.issuer = authtest.NewIssuer(t, resource)
		a, err := auth.New(auth.Config{
			Tokens:      []auth.Token{{Principal: "alice", Secret: tokAlice}, {Principal: "bob", Secret: tokBob}},
			OIDC:        auth.OIDCConfig{Issuer: e.issuer.URL, Audience: resource, PrincipalClaim: "sub"},
			ResourceURL: resource,
		}, auth.Options{Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		opts.Auth = a
	}
	ready := make(chan net.Addr, 1)
	opts.Ready = func(a net.Addr) { ready <- a }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- HTTP(ctx, s, opts) }()
	select {
	case a := <-ready:
		e.base = "http://" + a.String()
	case err := <-done:
		t.Fatalf("HTTP: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("HTTP returned %v", err)
		}
	})
	return e
}

type okProber struct{}

func (okProber) Probe(context.Context, string) error { return nil }

// client speaks the session era of streamable HTTP with raw requests, so tests see statuses
// and bodies exactly.
type client struct {
	t       *testing.T
	e       *env
	token   string
	origin  string
	session string
	ids     atomic.Int64 // mcp-go refuses a request id already in flight in the session
}

func (e *env) client(t *testing.T, token string) *client { return &client{t: t, e: e, token: token} }

// do sends one request; body may be nil, a string, or a value to marshal.
func (c *client) do(method, path string, body any, hdr map[string]string) (*http.Response, string) {
	c.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case io.Reader:
		r = b
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		r = strings.NewReader(string(raw))
	}
	req, err := http.NewRequest(method, c.e.base+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.origin != "" {
		req.Header.Set("Origin", c.origin)
	}
	if c.session != "" {
		req.Header.Set(server.HeaderKeySessionID, c.session)
		req.Header.Set(mcp.HeaderProtocolVersion, "2025-06-18")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	// A bound on every request: a regression that lets a GET attach to someone else's stream
	// must fail the test, not hang it.
	resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp, string(raw)
}

func rpc(id int, method string, params any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}
}

// initialize opens a session and returns the initialize response status.
func (c *client) initialize() int {
	c.t.Helper()
	resp, _ := c.do(http.MethodPost, "/mcp", rpc(1, "initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"},
	}), nil)
	if resp.StatusCode == http.StatusOK {
		c.session = resp.Header.Get(server.HeaderKeySessionID)
		c.do(http.MethodPost, "/mcp", map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}, nil)
	}
	return resp.StatusCode
}

// callResult is a tools/call outcome: the HTTP status, the tool's text and isError, the raw body.
type callResult struct {
	status  int
	text    string
	isError bool
	body    string
}

func (c *client) call(name string, args map[string]any) callResult {
	c.t.Helper()
	resp, body := c.do(http.MethodPost, "/mcp", rpc(int(c.ids.Add(1))+1, "tools/call", map[string]any{"name": name, "arguments": args}), nil)
	return parseCall(c.t, resp.StatusCode, body)
}

func parseCall(t *testing.T, status int, body string) callResult {
	t.Helper()
	out := callResult{status: status, body: body}
	if status != http.StatusOK {
		return out
	}
	payload := body
	if strings.HasPrefix(body, "event:") || strings.HasPrefix(body, "data:") {
		sc := bufio.NewScanner(strings.NewReader(body))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"result"`) {
				payload = d
			}
		}
	}
	var msg struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
			IsError bool                    `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(payload), &msg); err != nil || len(msg.Result.Content) == 0 {
		t.Fatalf("unexpected tools/call answer: %s", body)
	}
	out.text, out.isError = msg.Result.Content[0].Text, msg.Result.IsError
	return out
}

// noLeak fails when a body carries a token or internal error wording.
func noLeak(t *testing.T, body string, secrets ...string) {
	t.Helper()
	for _, s := range append(secrets, tokAlice, tokBob, "signature", "expired", "audience", "issuer", "kid", "JWKS", "alg") {
		if s != "" && strings.Contains(body, s) {
			t.Errorf("response body leaks %q: %s", s, body)
		}
	}
}
