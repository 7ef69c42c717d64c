//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/ports"
)

// holdOpen answers every request with a first line and then keeps the response open (no
// length: the body runs until the connection closes), a stream the app never ends by itself.
const holdOpen = `import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", 8767)); s.listen()
def serve(c):
    d = b""
    while b"\r\n\r\n" not in d:
        x = c.recv(4096)
        if not x: return
        d += x
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nopen\n")
    while c.recv(4096): pass
    c.close()
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
`

// TestPortsHardening is the regression test of issue 33, point 3 (exposed ports): the
// runtime's own ports are refused with the reason, wrong tokens do not each cost the API a
// read, and a stream through an unexposed URL ends within ports.StreamsEndWithin.
func TestPortsHardening(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t, bothPools...)

	t.Run("the runtime's control ports are refused", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name string
			c    connection
			want map[int]string // port → what the refusal says it does
		}{
			{"python runtime through the gateway", connections()[0], map[int]string{8888: "it runs commands"}},
			{"sandboxd by pod IP", connections()[4], map[int]string{8080: "files", 9090: "it runs commands"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				s := stdioSession(t, tc.c.env, "")
				created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": tc.c.pool, "namespace": ns.Name})
				with := sandboxArgs(created.SandboxClaimName, ns.Name)
				for port, does := range tc.want {
					msg := callError(t, s, "expose_port", with(map[string]any{"port": port}))
					for _, want := range []string{fmt.Sprintf("port %d is", port), does, "expose your application's port instead"} {
						if !strings.Contains(msg, want) {
							t.Errorf("expose_port %d: %q, want it to say %q", port, msg, want)
						}
					}
				}
				// Not refused wholesale: an application's port is still exposed.
				if u := call[struct{ URL string }](t, s, "expose_port", with(map[string]any{"port": 8765})).URL; u == "" {
					t.Error("expose_port 8765 gave no URL")
				}
				call[map[string]any](t, s, "delete_sandbox", with(nil))
			})
		}
	})

	t.Run("wrong tokens do not each cost an API read", func(t *testing.T) {
		t.Parallel()
		// The attack run: 300 wrong tokens cost 467 GETs. Now one read per claim per second
		// or so; a tenth of the requests leaves room for the audit Events and a slow flood.
		const requests, maxRequests = 300, 30
		const token = "ports-flood-token-0123456789"
		c := connections()[4] // sandboxd by pod IP, as deploy/ ships
		proxy := newAPIProxy(t)
		base := httpServer(t, append([]string{"K8S_SANDBOX_AUTH__TOKENS=alice:" + token, "KUBECONFIG=" + proxy.kubeconfig}, c.env...))
		s, err := authSession(t, base, token, "")
		if err != nil {
			t.Fatal(err)
		}
		created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
		with := sandboxArgs(created.SandboxClaimName, ns.Name)
		proxy.waitWatches(t, map[string]int{"sandboxclaims " + ns.Name: 1, "sandboxes " + ns.Name: 1})
		web := call[struct{ URL string }](t, s, "expose_port", with(map[string]any{"port": 8765})).URL
		prefix := web[:strings.LastIndex(strings.TrimSuffix(web, "/"), "/")+1] // .../ports/<ns>/<claim>/<port>/

		before := proxy.namespacedRequests()[ns.Name]
		start := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var answered []string
		capped := 0
		for w := range 20 {
			wg.Go(func() {
				for i := w; i < requests; i += 20 {
					code, body := fetch(t, fmt.Sprintf("%swrong-%d/", prefix, i), token)
					// 429: past the principal's call cap, which these requests' checks count in
					// (issue 43.5), so 20 at once are not all checked.
					if code == http.StatusTooManyRequests && strings.Contains(body, "too many concurrent calls") {
						mu.Lock()
						capped++
						mu.Unlock()
					} else if code != http.StatusNotFound {
						mu.Lock()
						answered = append(answered, fmt.Sprintf("%d %q", code, body))
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		n := proxy.namespacedRequests()[ns.Name] - before
		t.Logf("%d wrong tokens in %v: %d API requests in the namespace, %d past the call cap", requests, elapsed.Round(time.Millisecond), n, capped)
		if capped == requests {
			t.Error("every wrong token was refused by the call cap: none was checked")
		}
		if len(answered) > 0 {
			t.Errorf("%d wrong tokens were answered otherwise than 404, e.g. %s", len(answered), answered[0])
		}
		if n > maxRequests {
			t.Errorf("%d wrong tokens cost %d API requests, want at most %d", requests, n, maxRequests)
		}
		call[map[string]any](t, s, "delete_sandbox", with(nil))
	})

	t.Run("a stream ends within the bound after unexpose_port", func(t *testing.T) {
		t.Parallel()
		const token = "ports-stream-token-0123456789"
		c := connections()[4]
		env := append([]string{"K8S_SANDBOX_AUTH__TOKENS=alice:" + token}, c.env...)
		// Two replicas: the one that unexposes ends its own streams at once, the other
		// through its check of the claims.
		baseA, baseB := httpServer(t, env), httpServer(t, env)
		s, err := authSession(t, baseA, token, "")
		if err != nil {
			t.Fatal(err)
		}
		created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
		with := sandboxArgs(created.SandboxClaimName, ns.Name)
		call[processInfo](t, s, "start_process", with(map[string]any{"command": "python3", "args": []any{"-c", holdOpen}}))
		// On a loaded machine the client's read of the end comes a little after the cut.
		limit := ports.StreamsEndWithin + time.Second
		for _, tc := range []struct {
			name  string
			other bool // the stream goes through the replica that did not unexpose
		}{
			{"through the replica that unexposed", false},
			{"through another replica", true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				u := call[struct{ URL string }](t, s, "expose_port", with(map[string]any{"port": 8767})).URL
				if tc.other {
					u = strings.Replace(u, baseA, baseB, 1)
				}
				body := openStream(t, u+"hold", token)
				ended := make(chan struct{})
				go func() {
					defer close(ended)
					_, _ = io.Copy(io.Discard, body)
				}()
				select {
				case <-ended:
					t.Fatal("the stream ended before unexpose_port")
				case <-time.After(ports.StreamsEndWithin):
				}
				if !call[struct{ Unexposed bool }](t, s, "unexpose_port", with(map[string]any{"port": 8767})).Unexposed {
					t.Fatal("unexpose_port found nothing")
				}
				unexposed := time.Now()
				select {
				case <-ended:
					if d := time.Since(unexposed); d > limit {
						t.Errorf("the stream ended %v after unexpose_port, want within %v (README: %v)", d.Round(time.Millisecond), limit, ports.StreamsEndWithin)
					}
				case <-time.After(3 * limit):
					t.Fatalf("the stream was still open %v after unexpose_port", 3*limit)
				}
			})
		}
		call[map[string]any](t, s, "delete_sandbox", with(nil))
	})
}

// openStream GETs u until the app answers with its first line (it starts a moment after
// start_process) and returns the rest of the body, still open; the test's end closes it.
func openStream(t *testing.T, u, token string) io.Reader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var last string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			last = err.Error()
			continue
		}
		br := bufio.NewReader(resp.Body)
		line, err := br.ReadString('\n')
		if resp.StatusCode == http.StatusOK && line == "open\n" {
			t.Cleanup(func() { _ = resp.Body.Close() })
			return br
		}
		last = fmt.Sprintf("%d %q %v", resp.StatusCode, line, err)
		resp.Body.Close()
	}
	t.Fatalf("GET %s never streamed: %s", u, last)
	return nil
}
