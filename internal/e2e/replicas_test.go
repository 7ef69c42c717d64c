//go:build e2e

package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/bench/load"
)

// TestReplicas runs three server processes behind one round-robin address, the way the
// Deployment's replicas sit behind its Service: sessionless calls land on a different replica
// each time and the whole scenario passes (processes started on one replica are read on
// another, ports exposed through one are served by all); then one replica is killed and the
// same client carries on with the sandbox it had, and no claim is left behind.
func TestReplicas(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t).Name
	const token = "replicas-token-0123456789"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := load.NewFront(ln)
	t.Cleanup(front.Close)
	c := connections()[4] // sandboxd by pod IP, as deploy/ ships
	env := append([]string{"K8S_SANDBOX_AUTH__TOKENS=alice:" + token, "K8S_SANDBOX_HTTP__PUBLIC_URL=" + front.URL()}, c.env...)
	var procs []*replicaProc
	var hosts []string
	for range 3 {
		cmd, base := startServer(t, env)
		u, _ := url.Parse(base)
		procs = append(procs, &replicaProc{kill: cmd.Process.Kill})
		front.Add(u.Host)
		hosts = append(hosts, u.Host)
	}
	s, err := authSession(t, front.URL(), token, "") // the default era: sessionless
	if err != nil {
		t.Fatal(err)
	}

	t.Run("scenario across replicas", func(t *testing.T) {
		scenarioWith(t, s, ns, c.pool, 5*time.Second) // the status after delete may reach a replica whose watch lags
		for i, n := range front.Served() {
			if n < 5 {
				t.Errorf("replica %d served %d requests: the calls did not alternate (%v)", i, n, front.Served())
			}
		}
	})

	t.Run("a 2025-11-25 session on another replica is told to start anew", func(t *testing.T) {
		post := func(session, body string) (*http.Response, string) {
			req, _ := http.NewRequest(http.MethodPost, front.URL()+"/mcp", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if session != "" {
				req.Header.Set("Mcp-Session-Id", session)
				req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp, string(b)
		}
		resp, _ := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
			`"capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
		id := resp.Header.Get("Mcp-Session-Id")
		if id == "" {
			t.Fatalf("initialize: %d, no session", resp.StatusCode)
		}
		// Round robin: the next request reaches another replica, which never held the session.
		resp, body := post(id, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "Start a new session with initialize") {
			t.Errorf("a session's call on another replica: %d %s", resp.StatusCode, body)
		}
	})

	created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns})
	with := sandboxArgs(created.SandboxClaimName, ns)
	call[execResult](t, s, "execute_command", with(map[string]any{"command": "mkdir -p site && echo from-a-replica > site/hello.txt"}))
	proc := call[processInfo](t, s, "start_process", with(map[string]any{"command": "python3",
		"args": []any{"-m", "http.server", "8765", "--bind", "0.0.0.0", "--directory", "site"}}))
	web := call[struct{ URL string }](t, s, "expose_port", with(map[string]any{"port": 8765})).URL

	t.Run("an exposed port is served by every replica", func(t *testing.T) {
		var code int
		var body string
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			if code, body = fetch(t, web+"hello.txt", token); code == 200 {
				break
			}
		}
		if code != 200 {
			t.Fatalf("GET %s: %d %q", web, code, body)
		}
		before := front.Served()
		for range 6 {
			if code, body := fetch(t, web+"hello.txt", token); code != 200 || body != "from-a-replica\n" {
				t.Errorf("through the front: %d %q", code, body)
			}
		}
		for i, n := range front.Served() {
			if n-before[i] < 2 {
				t.Errorf("replica %d served %d of the port's requests", i, n-before[i])
			}
		}
	})

	t.Run("one replica killed, the client carries on", func(t *testing.T) {
		if err := procs[0].kill(); err != nil {
			t.Fatal(err)
		}
		front.Remove(hosts[0]) // the endpoints controller's part when a pod dies
		// Every remaining replica, twice.
		for range 4 {
			if ex := call[execResult](t, s, "execute_command", with(map[string]any{"command": "cat site/hello.txt"})); ex.Stdout != "from-a-replica\n" {
				t.Errorf("after the kill: %+v", ex)
			}
		}
		if st := call[statusResult](t, s, "get_sandbox_status", with(nil)); !st.Ready {
			t.Errorf("status after the kill: %+v", st)
		}
		call[map[string]any](t, s, "signal_process", with(map[string]any{"process_id": proc.ProcessID}))
		if !call[struct{ Unexposed bool }](t, s, "unexpose_port", with(map[string]any{"port": 8765})).Unexposed {
			t.Error("unexpose_port through another replica found nothing")
		}
		// Every replica stops serving it once its watch has the change (milliseconds).
		waitFor(t, 10*time.Second, func() bool {
			for range 2 {
				if code, _ := fetch(t, web+"hello.txt", token); code != http.StatusNotFound {
					return false
				}
			}
			return true
		})
		call[struct{}](t, s, "delete_sandbox", with(nil))
		left, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(left.Items) != 0 {
			t.Errorf("claims left in %s: %d", ns, len(left.Items))
		}
	})
}

// replicaProc is what the test needs of a replica's process.
type replicaProc struct{ kill func() error }
