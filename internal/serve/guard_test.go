package serve

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestOriginValidation(t *testing.T) {
	e := newEnv(t, envOpts{settings: HTTPSettings{AllowedOrigins: []string{"https://app.example.com"}}})
	tests := []struct {
		origin string
		token  string
		ok     bool
	}{
		{"", tokAlice, true},
		{"http://localhost:3000", tokAlice, true},
		{"https://LOCALHOST", tokAlice, true},
		{"http://127.0.0.1:5173", tokAlice, true},
		{"http://[::1]:8080", tokAlice, true},
		{"https://app.example.com", tokAlice, true},
		{"https://app.example.com:443", tokAlice, true},
		{"https://evil.example.com", tokAlice, false},
		{"http://app.example.com", tokAlice, false},
		{"https://app.example.com.evil.com", tokAlice, false},
		{"http://localhost.evil.com", tokAlice, false},
		{"null", tokAlice, false},
		{"file://", tokAlice, false},
		// A foreign page gets 403 before authentication: no challenge to probe.
		{"https://evil.example.com", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.origin+"/"+tc.token[:min(len(tc.token), 5)], func(t *testing.T) {
			c := e.client(t, tc.token)
			c.origin = tc.origin
			code := c.initialize()
			if tc.ok {
				if code != http.StatusOK {
					t.Fatalf("allowed origin got %d", code)
				}
				if got := c.call("whoami", nil); got.text != "alice|"+c.session {
					t.Fatalf("whoami: %+v", got)
				}
				return
			}
			resp, body := c.do(http.MethodPost, "/mcp", rpc(1, "tools/list", map[string]any{}), nil)
			if code != http.StatusForbidden || resp.StatusCode != http.StatusForbidden || strings.TrimSpace(body) != `{"error":"origin not allowed"}` {
				t.Fatalf("got %d then %d %s, want 403", code, resp.StatusCode, body)
			}
			if resp.Header.Get("WWW-Authenticate") != "" {
				t.Error("a foreign origin got an auth challenge")
			}
			noLeak(t, body)
		})
	}
}

func TestBodyLimit(t *testing.T) {
	const limit = 256 << 10
	e := newEnv(t, envOpts{settings: HTTPSettings{MaxBodyBytes: limit}})
	c := e.client(t, tokAlice)
	if code := c.initialize(); code != http.StatusOK {
		t.Fatalf("initialize: %d", code)
	}
	call := func(n int) string {
		data := strings.Repeat("a", n)
		return `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"size","arguments":{"data":"` + data + `"}}}`
	}
	// Under the cap: the tool gets all of it.
	resp, body := c.do(http.MethodPost, "/mcp", call(limit-200), nil)
	if got := parseCall(t, resp.StatusCode, body); got.isError || got.text != strconv.Itoa(limit-200) {
		t.Fatalf("under the cap: %+v", got)
	}
	tooLarge := `{"error":"request body too large: the limit is 262144 bytes"}`
	// Over the cap, with Content-Length and without (chunked: the size shows only while reading).
	for name, body := range map[string]io.Reader{
		"content-length": strings.NewReader(call(limit)),
		"chunked":        io.MultiReader(strings.NewReader(call(limit))),
	} {
		resp, got := c.do(http.MethodPost, "/mcp", body, nil)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || strings.TrimSpace(got) != tooLarge {
			t.Errorf("%s: got %d %s", name, resp.StatusCode, got)
		}
		noLeak(t, got)
	}
	// The session survives the refusals.
	if got := c.call("whoami", nil); got.text != "alice|"+c.session {
		t.Fatalf("after 413: %+v", got)
	}
}

// The read timeout bounds reading a request, not the call: a tool running longer than it must
// finish (a WriteTimeout, or a read deadline left on the connection, would cut it off).
func TestLongCallOutlivesReadTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for over a second")
	}
	e := newEnv(t, envOpts{settings: HTTPSettings{ReadTimeout: time.Second}})
	c := e.client(t, tokAlice)
	if code := c.initialize(); code != http.StatusOK {
		t.Fatalf("initialize: %d", code)
	}
	if got := c.call("sleep", map[string]any{"ms": 1600}); got.isError || got.text != "slept" {
		t.Fatalf("long call: %+v", got)
	}
}

// A client that stops sending its body mid-way is cut off by the read timeout.
func TestSlowBodyTimesOut(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for over a second")
	}
	e := newEnv(t, envOpts{settings: HTTPSettings{ReadTimeout: time.Second}})
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: "+strings.TrimPrefix(e.base, "http://")+
		"\r\nAuthorization: Bearer "+tokAlice+"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	reply, _ := io.ReadAll(conn) // ends when the server closes the connection
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("stalled body held the connection for %v", took)
	}
	if len(reply) > 0 && !strings.HasPrefix(string(reply), "HTTP/1.1 400") {
		t.Errorf("reply to a stalled body: %q", reply)
	}
}
