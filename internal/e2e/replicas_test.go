//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// replicas is a round-robin load balancer over server processes, as a Service spreads
// connections over its endpoints. A replica that refuses the connection is skipped (nothing
// was sent yet), as a load balancer retrying on connect failure does; a request it already
// received is not retried.
type replicas struct {
	mu       sync.Mutex
	backends []string // host:port
	next     int
	hits     []int
}

func (r *replicas) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	var last error
	for range len(r.backends) {
		r.mu.Lock()
		i := r.next
		r.next = (r.next + 1) % len(r.backends)
		r.mu.Unlock()
		out := req.Clone(req.Context())
		out.URL.Host = r.backends[i]
		if req.Body != nil {
			out.Body = io.NopCloser(bytes.NewReader(body))
		}
		resp, err := http.DefaultTransport.RoundTrip(out)
		var op *net.OpError
		if err != nil && errors.As(err, &op) && op.Op == "dial" {
			last = err
			continue
		}
		r.mu.Lock()
		r.hits[i]++
		r.mu.Unlock()
		return resp, err
	}
	return nil, last
}

func (r *replicas) served() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.hits...)
}

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
	lb := &replicas{}
	front := &httptest.Server{Listener: ln, Config: &http.Server{Handler: &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "replica" },
		Transport:     lb,
		FlushInterval: -1,
	}}}
	front.Start()
	t.Cleanup(front.Close)
	c := connections()[4] // sandboxd by pod IP, as deploy/ ships
	env := append([]string{"K8S_SANDBOX_AUTH__TOKENS=alice:" + token, "K8S_SANDBOX_HTTP__PUBLIC_URL=" + front.URL}, c.env...)
	var procs []*replicaProc
	for range 3 {
		cmd, base := startServer(t, env)
		u, _ := url.Parse(base)
		procs = append(procs, &replicaProc{kill: cmd.Process.Kill})
		lb.backends = append(lb.backends, u.Host)
		lb.hits = append(lb.hits, 0)
	}
	s, err := authSession(t, front.URL, token, "") // the default era: sessionless
	if err != nil {
		t.Fatal(err)
	}

	t.Run("scenario across replicas", func(t *testing.T) {
		scenario(t, s, ns, c.pool)
		for i, n := range lb.served() {
			if n < 5 {
				t.Errorf("replica %d served %d requests: the calls did not alternate (%v)", i, n, lb.served())
			}
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
		before := lb.served()
		for range 6 {
			if code, body := fetch(t, web+"hello.txt", token); code != 200 || body != "from-a-replica\n" {
				t.Errorf("through the front: %d %q", code, body)
			}
		}
		for i, n := range lb.served() {
			if n-before[i] < 2 {
				t.Errorf("replica %d served %d of the port's requests", i, n-before[i])
			}
		}
	})

	t.Run("one replica killed, the client carries on", func(t *testing.T) {
		if err := procs[0].kill(); err != nil {
			t.Fatal(err)
		}
		for range 4 { // every remaining replica, twice
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
