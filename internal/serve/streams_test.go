package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// openStream sends the standalone GET of c's session and returns the response with its body
// unread (an admitted stream stays open until the body is closed).
func (c *client) openStream() *http.Response {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.e.base+"/mcp", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set(server.HeaderKeySessionID, c.session)
	req.Header.Set(mcp.HeaderProtocolVersion, "2025-06-18")
	// A fresh transport per stream: each holds its own connection, as separate clients would.
	resp, err := (&http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{}}).Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func errorOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%d: body is not JSON: %v", resp.StatusCode, err)
	}
	var msg string
	if json.Unmarshal(body.Error, &msg) != nil {
		var rpcErr struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body.Error, &rpcErr)
		msg = rpcErr.Message
	}
	return msg
}

// Issue 43.5: one standalone GET stream per session (409 beyond), and at most
// MaxStreamsPerPrincipal streams per principal (429 beyond) while another principal still
// opens its own; a closed or ended stream gives its place back.
func TestStreamBounds(t *testing.T) {
	e := newEnv(t, envOpts{settings: HTTPSettings{MaxStreamsPerPrincipal: 2}})
	var alice []*client
	for range 3 {
		c := e.client(t, tokAlice)
		if code := c.initialize(); code != http.StatusOK {
			t.Fatalf("initialize: %d", code)
		}
		alice = append(alice, c)
	}
	first := alice[0].openStream()
	if first.StatusCode != http.StatusOK || first.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("first stream: %d %s", first.StatusCode, first.Header.Get("Content-Type"))
	}
	second := alice[0].openStream()
	if msg := errorOf(t, second); second.StatusCode != http.StatusConflict || !strings.Contains(msg, "already has its standalone GET stream") {
		t.Fatalf("a second stream of one session: %d %q", second.StatusCode, msg)
	}
	if resp := alice[1].openStream(); resp.StatusCode != http.StatusOK {
		t.Fatalf("a stream of alice's second session: %d", resp.StatusCode)
	}
	third := alice[2].openStream()
	if msg := errorOf(t, third); third.StatusCode != http.StatusTooManyRequests || third.Header.Get("Retry-After") == "" ||
		!strings.Contains(msg, "the limit is 2 (K8S_SANDBOX_HTTP__MAX_STREAMS_PER_PRINCIPAL)") {
		t.Fatalf("alice past her stream cap: %d %q", third.StatusCode, msg)
	}
	// A 2026-07-28 subscriptions/listen request is a stream too.
	v := mcp.ProtocolVersion20260728
	resp, body := e.client(t, tokAlice).do(http.MethodPost, "/mcp", rpc(9, "subscriptions/listen", map[string]any{
		"notifications": map[string]any{},
		"_meta": map[string]any{mcp.MetaKeyProtocolVersion: v, mcp.MetaKeyClientCapabilities: map[string]any{},
			mcp.MetaKeyClientInfo: map[string]any{"name": "t", "version": "1"}},
	}), map[string]string{mcp.HeaderProtocolVersion: v, mcp.HeaderMethod: "subscriptions/listen"})
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "K8S_SANDBOX_HTTP__MAX_STREAMS_PER_PRINCIPAL") ||
		!strings.Contains(body, `"id":9`) {
		t.Fatalf("alice's subscriptions/listen past her cap: %d %s", resp.StatusCode, body)
	}
	bob := e.client(t, tokBob)
	if code := bob.initialize(); code != http.StatusOK {
		t.Fatalf("bob's initialize while alice is at her cap: %d", code)
	}
	if resp := bob.openStream(); resp.StatusCode != http.StatusOK {
		t.Fatalf("bob's stream while alice is at her cap: %d", resp.StatusCode)
	}
	if n := e.sessions.Streams(); n != 3 {
		t.Fatalf("open streams %d, want 3", n)
	}
	// Closing a stream, or ending its session, gives its place back.
	first.Body.Close()
	waitUntil(t, 10*time.Second, func() bool { return e.sessions.Streams() == 2 })
	if resp := alice[0].openStream(); resp.StatusCode != http.StatusOK {
		t.Fatalf("a new stream after closing the first: %d", resp.StatusCode)
	}
	if resp, _ := alice[1].do(http.MethodDelete, "/mcp", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	waitUntil(t, 10*time.Second, func() bool { return e.sessions.Streams() == 2 })
	if resp := alice[2].openStream(); resp.StatusCode != http.StatusOK {
		t.Fatalf("a stream after alice's other session ended: %d", resp.StatusCode)
	}
}
