package serve

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"
)

func (e *env) endReason(id string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.ended[id]
	return r, ok
}

func waitUntil(t *testing.T, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func initBody(name string) map[string]any {
	return rpc(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": name, "version": "1"}})
}

// Issue 14.3: sessions are bounded per principal and in total, and the refusal says which
// bound was hit and what to do, as a JSON-RPC error an MCP client can show.
func TestSessionBounds(t *testing.T) {
	e := newEnv(t, envOpts{settings: HTTPSettings{MaxSessionsPerPrincipal: 2, MaxSessions: 3}})
	var alice []*client
	for range 2 {
		c := e.client(t, tokAlice)
		if code := c.initialize(); code != http.StatusOK {
			t.Fatalf("initialize: %d", code)
		}
		alice = append(alice, c)
	}
	perPrincipal := `{"error":{"code":-32000,"message":"too many open MCP sessions for this principal: the limit is 2 ` +
		`(K8S_SANDBOX_HTTP__MAX_SESSIONS_PER_PRINCIPAL). End sessions you no longer use (HTTP DELETE with their Mcp-Session-Id) ` +
		`or wait until one expires (a session that makes no call ends 1m0s after initialize, an idle one after 1m0s), then retry."},"id":1,"jsonrpc":"2.0"}`
	resp, body := e.client(t, tokAlice).do(http.MethodPost, "/mcp", initBody("third"), nil)
	if resp.StatusCode != http.StatusTooManyRequests || strings.TrimSpace(body) != perPrincipal ||
		resp.Header.Get("Retry-After") != "60" || resp.Header.Get(server.HeaderKeySessionID) != "" {
		t.Fatalf("alice's third session: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	bob := e.client(t, tokBob)
	if code := bob.initialize(); code != http.StatusOK {
		t.Fatalf("bob is not bound by alice's sessions: %d", code)
	}
	total := `{"error":{"code":-32000,"message":"the server holds the most MCP sessions it allows: the limit is 3 ` +
		`(K8S_SANDBOX_HTTP__MAX_SESSIONS). Retry later (a session that makes no call ends 1m0s after initialize, an idle one after 1m0s)."},"id":1,"jsonrpc":"2.0"}`
	resp, body = e.client(t, tokBob).do(http.MethodPost, "/mcp", initBody("bob2"), nil)
	if resp.StatusCode != http.StatusServiceUnavailable || strings.TrimSpace(body) != total {
		t.Fatalf("fourth session in total: %d %s", resp.StatusCode, body)
	}
	// Ending a session gives its place back.
	if resp, _ := alice[0].do(http.MethodDelete, "/mcp", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	if code := e.client(t, tokBob).initialize(); code != http.StatusOK {
		t.Fatalf("after a DELETE: %d", code)
	}
	if got := alice[1].call("whoami", nil); got.text != "alice|"+alice[1].session {
		t.Fatalf("a session under the bound works: %+v", got)
	}
}

// Concurrent initializes never get more places than the bound.
func TestSessionBoundUnderConcurrency(t *testing.T) {
	e := newEnv(t, envOpts{settings: HTTPSettings{MaxSessionsPerPrincipal: 5}})
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			switch code := e.client(t, tokAlice).initialize(); code {
			case http.StatusOK:
				ok.Add(1)
			case http.StatusTooManyRequests:
				refused.Add(1)
			default:
				t.Errorf("initialize: %d", code)
			}
		})
	}
	wg.Wait()
	// Connections the transport dialed but never used would hold the shutdown for 5 s.
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	if ok.Load() != 5 || refused.Load() != 35 {
		t.Fatalf("%d opened, %d refused; want 5 and 35", ok.Load(), refused.Load())
	}
}

// Issue 14.3: an initialize is held to its own cap (a session keeps what it sent), with and
// without Content-Length and with a stale session ID; other requests keep the body cap.
func TestInitializeSizeCap(t *testing.T) {
	e := newEnv(t, envOpts{settings: HTTPSettings{MaxInitializeBytes: 2048}})
	want := `{"error":"request body too large: the limit is 2048 bytes for initialize (send a shorter clientInfo)"}`
	big := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":%q,"version":"1"}}}`,
		strings.Repeat("n", 4000))
	live := e.client(t, tokAlice)
	if code := live.initialize(); code != http.StatusOK {
		t.Fatal(code)
	}
	for name, send := range map[string]func() (*http.Response, string){
		"content-length": func() (*http.Response, string) { return e.client(t, tokAlice).do(http.MethodPost, "/mcp", big, nil) },
		"chunked": func() (*http.Response, string) {
			return e.client(t, tokAlice).do(http.MethodPost, "/mcp", io.MultiReader(strings.NewReader(big)), nil)
		},
		"stale session ID": func() (*http.Response, string) { return live.do(http.MethodPost, "/mcp", big, nil) },
	} {
		resp, body := send()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || strings.TrimSpace(body) != want || resp.Header.Get(server.HeaderKeySessionID) != "" {
			t.Errorf("%s: %d %s", name, resp.StatusCode, body)
		}
	}
	if resp, body := e.client(t, tokAlice).do(http.MethodPost, "/mcp", initBody(strings.Repeat("n", 1000)), nil); resp.StatusCode != http.StatusOK {
		t.Errorf("initialize under the cap: %d %s", resp.StatusCode, body)
	}
	if got := live.call("size", map[string]any{"data": strings.Repeat("a", 10000)}); got.text != "10000" {
		t.Errorf("a call over the initialize cap: %+v", got)
	}
}

// Issue 14.3: a session that never makes a call ends after UnusedSessionTTL, long before the
// idle TTL; one that listed the tools does not.
func TestUnusedSessionsExpireSooner(t *testing.T) {
	e := newEnv(t, envOpts{settings: HTTPSettings{UnusedSessionTTL: 300 * time.Millisecond}})
	silent, lister := e.client(t, tokAlice), e.client(t, tokAlice)
	for _, c := range []*client{silent, lister} {
		if code := c.initialize(); code != http.StatusOK {
			t.Fatal(code)
		}
	}
	if resp, body := lister.do(http.MethodPost, "/mcp", rpc(5, "tools/list", map[string]any{}), nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("tools/list: %d %s", resp.StatusCode, body)
	}
	waitUntil(t, 5*time.Second, func() bool { _, ok := e.endReason(silent.session); return ok })
	if r, _ := e.endReason(silent.session); r != "it made no call within 300ms of initialize" {
		t.Errorf("reason %q", r)
	}
	if !e.wasUnregistered(silent.session) {
		t.Error("the expired session is still registered with mcp-go")
	}
	if got := silent.call("whoami", nil); got.status != http.StatusNotFound {
		t.Errorf("call in the expired session: %+v", got)
	}
	if _, ok := e.endReason(lister.session); ok {
		t.Error("a session that made a call expired as unused")
	}
	if got := lister.call("whoami", nil); got.text != "alice|"+lister.session {
		t.Errorf("the used session: %+v", got)
	}
}

// Issue 14.7: a call in flight keeps its session alive past the idle TTL; once it returns the
// session idles out as usual.
func TestCallKeepsSessionAlive(t *testing.T) {
	e := newEnv(t, envOpts{idleTTL: 300 * time.Millisecond})
	c := e.client(t, tokAlice)
	if code := c.initialize(); code != http.StatusOK {
		t.Fatal(code)
	}
	if got := c.call("sleep", map[string]any{"ms": 1500}); got.isError || got.text != "slept" {
		t.Fatalf("long call: %+v", got)
	}
	if r, ok := e.endReason(c.session); ok {
		t.Fatalf("session ended during its call: %s", r)
	}
	waitUntil(t, 5*time.Second, func() bool { _, ok := e.endReason(c.session); return ok })
	if r, _ := e.endReason(c.session); r != "it was idle for 300ms" {
		t.Errorf("reason %q", r)
	}
}

// Issue 14.2/14.7: ending a session cancels its calls, each answers that the session ended
// (never a success), and OnEnd (the release) runs only once they have returned. Issue 30.3: the
// caller is authenticated, so its sandboxes outlive the session and the answer says so.
func TestDeleteStopsRunningCall(t *testing.T) {
	e := newEnv(t, envOpts{})
	c := e.client(t, tokAlice)
	if code := c.initialize(); code != http.StatusOK {
		t.Fatal(code)
	}
	res := make(chan callResult, 1)
	go func() { res <- c.call("linger", nil) }()
	<-e.started
	if resp, _ := c.do(http.MethodDelete, "/mcp", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	got := <-res
	want := "This MCP session ended while the call ran (the client ended it with HTTP DELETE), so the call was stopped " +
		"and its result is lost. Your sandboxes are kept: start a new session (initialize); list_sandboxes shows them."
	if !got.isError || got.text != want {
		t.Fatalf("call of the ended session: %+v", got)
	}
	waitUntil(t, 5*time.Second, func() bool { _, ok := e.endReason(c.session); return ok })
	if r, _ := e.endReason(c.session); r != reasonDeleted+" (after the linger call returned)" {
		t.Errorf("OnEnd: %q", r)
	}
}

// A call that reaches the middleware after its session ended is not run.
func TestCallOfEndedSessionIsRefused(t *testing.T) {
	s := NewSessions(SessionOptions{Log: zerolog.Nop()})
	ran := false
	h := s.Calls(func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran = true
		return mcp.NewToolResultText("ran"), nil
	})
	ctx := (&server.MCPServer{}).WithContext(context.Background(), fakeSession{"mcp-session-gone"})
	res, err := h(ctx, mcp.CallToolRequest{})
	if err != nil || ran || !res.IsError || res.Content[0].(mcp.TextContent).Text !=
		"This MCP session has ended, so the call was not run. Start a new session (initialize) to continue." {
		t.Fatalf("ran=%v %+v %v", ran, res, err)
	}
}

// An ended session that mcp-go registers late (a DELETE racing the initialize answer) is
// unregistered at once, so it never lingers.
func TestEndedSessionIsNotRegisteredAgain(t *testing.T) {
	e := newEnv(t, envOpts{})
	c := e.client(t, tokAlice)
	if code := c.initialize(); code != http.StatusOK {
		t.Fatal(code)
	}
	if err := e.srv.RegisterSession(context.Background(), fakeSession{"mcp-session-ended"}); err != nil {
		t.Fatal(err)
	}
	if !e.wasUnregistered("mcp-session-ended") {
		t.Error("a session unknown to the registry stayed registered")
	}
	if e.wasUnregistered(c.session) {
		t.Error("a live session was unregistered")
	}
}

func TestGETNeedsSession(t *testing.T) {
	e := newEnv(t, envOpts{})
	resp, body := e.client(t, tokAlice).do(http.MethodGet, "/mcp", nil, nil)
	if resp.StatusCode != http.StatusBadRequest ||
		strings.TrimSpace(body) != `{"error":"a GET stream needs the Mcp-Session-Id of your session: send initialize first"}` {
		t.Fatalf("GET without a session: %d %s", resp.StatusCode, body)
	}
}

type fakeSession struct{ id string }

func (f fakeSession) SessionID() string { return f.id }
func (fakeSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	return make(chan mcp.JSONRPCNotification, 1)
}
func (fakeSession) Initialize()       {}
func (fakeSession) Initialized() bool { return true }
