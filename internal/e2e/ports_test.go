//go:build e2e

package e2e

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upgradeEcho answers an HTTP Upgrade with 101 and then echoes bytes upper-cased: enough of
// a WebSocket server to show that upgrades pass through the proxy both ways.
const upgradeEcho = `import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", 8766)); s.listen()
def serve(c):
    d = b""
    while b"\r\n\r\n" not in d:
        x = c.recv(4096)
        if not x: return
        d += x
    c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
    while True:
        x = c.recv(4096)
        if not x: break
        c.sendall(x.upper())
    c.close()
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
`

// TestExposePort: a web server and an upgrade echo started in a sandbox are reached through
// expose_port over stdio (a loopback listener; python runtime through the router) and over HTTP
// (a path under the server behind its bearer token; sandboxd by pod IP); unexpose_port and
// delete_sandbox end the URLs.
func TestExposePort(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t, bothPools...)
	const token = "ports-token-0123456789"
	cases := []struct {
		name string
		c    connection
		http bool
	}{
		{"stdio-gateway", connections()[0], false},
		{"http-sandboxd", connections()[4], true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var s *mcp.ClientSession
			auth := ""
			if tc.http {
				base := httpServer(t, append([]string{"K8S_SANDBOX_AUTH__TOKENS=alice:" + token}, tc.c.env...))
				var err error
				if s, err = authSession(t, base, token, ""); err != nil {
					t.Fatal(err)
				}
				auth = token
			} else {
				s = stdioSession(t, tc.c.env, "")
			}
			created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": tc.c.pool, "namespace": ns.Name})
			with := sandboxArgs(created.SandboxClaimName, ns.Name)
			call[execResult](t, s, "execute_command", with(map[string]any{"command": "mkdir -p site && echo hello-port > site/hello.txt"}))
			call[processInfo](t, s, "start_process", with(map[string]any{"command": "python3",
				"args": []any{"-m", "http.server", "8765", "--bind", "0.0.0.0", "--directory", "site"}}))
			call[processInfo](t, s, "start_process", with(map[string]any{"command": "python3", "args": []any{"-c", upgradeEcho}}))

			web := call[struct{ URL string }](t, s, "expose_port", with(map[string]any{"port": 8765})).URL
			again := call[struct{ URL string }](t, s, "expose_port", with(map[string]any{"port": 8765})).URL
			if again == web {
				t.Errorf("expose_port twice gave the same URL %q", web)
			}
			if tc.http && !strings.Contains(web, "/ports/") || !tc.http && !strings.HasPrefix(web, "http://127.0.0.1:") {
				t.Errorf("url %q for http=%v", web, tc.http)
			}
			var code int
			var body string
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
				if code, body = fetch(t, web+"hello.txt", auth); code == 200 {
					break
				}
			}
			if code != 200 || body != "hello-port\n" {
				t.Fatalf("GET through expose_port: %d %q", code, body)
			}
			if code, body := fetch(t, again+"hello.txt", auth); code != 200 || body != "hello-port\n" {
				t.Errorf("GET through the second URL: %d %q", code, body)
			}
			if tc.http {
				if code, _ := fetch(t, web+"hello.txt", ""); code != http.StatusUnauthorized {
					t.Errorf("without the bearer token: %d, want 401", code)
				}
			}

			ws := call[struct{ URL string }](t, s, "expose_port", with(map[string]any{"port": 8766})).URL
			var echoed string
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && echoed != "PING\n"; time.Sleep(500 * time.Millisecond) {
				echoed = upgradeRoundTrip(t, ws, auth)
			}
			if echoed != "PING\n" {
				t.Errorf("upgraded connection echoed %q", echoed)
			}

			if !call[struct{ Unexposed bool }](t, s, "unexpose_port", with(map[string]any{"port": 8765})).Unexposed {
				t.Error("unexpose_port found nothing")
			}
			for _, u := range []string{web, again} {
				if code, _ := fetch(t, u+"hello.txt", auth); code == 200 {
					t.Errorf("%s still works after unexpose_port", u)
				}
			}
			call[map[string]any](t, s, "delete_sandbox", with(nil))
			if echoed := upgradeRoundTrip(t, ws, auth); echoed == "PING\n" {
				t.Error("an exposed port outlived its sandbox")
			}
		})
	}
}

// fetch GETs u with an optional bearer token; a refused connection is code 0.
func fetch(t *testing.T, u, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// upgradeRoundTrip opens an upgraded connection to u, sends "ping\n" and returns the echo, or
// what went wrong.
func upgradeRoundTrip(t *testing.T, u, token string) string {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", pu.Host, 5*time.Second)
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET " + pu.Path + " HTTP/1.1\r\nHost: " + pu.Host + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
	if token != "" {
		req += "Authorization: Bearer " + token + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		return err.Error()
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err.Error()
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return resp.Status
	}
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return err.Error()
	}
	line, err := br.ReadString('\n')
	if err != nil {
		return err.Error()
	}
	return line
}
