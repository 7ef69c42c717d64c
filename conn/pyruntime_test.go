package conn_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/conntest"
)

// fakeRouter enforces the sandbox router's header contract (sandbox-router/proxy/headers.go)
// in front of a runtime and records what it was sent.
type fakeRouter struct {
	next http.Handler
	// hook may answer a request itself (return true) instead of the runtime.
	hook func(w http.ResponseWriter, r *http.Request) bool

	mu       sync.Mutex
	requests []*http.Request
}

func (f *fakeRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, ns, port := r.Header.Get("X-Sandbox-ID"), r.Header.Get("X-Sandbox-Namespace"), r.Header.Get("X-Sandbox-Port")
	switch n, err := strconv.Atoi(port); {
	case id == "":
		writeJSON(w, 400, map[string]string{"detail": "X-Sandbox-ID header is required."})
		return
	case !dnsLabel(id):
		writeJSON(w, 400, map[string]string{"detail": "Invalid sandbox ID format."})
		return
	case ns != "" && !dnsLabel(ns):
		writeJSON(w, 400, map[string]string{"detail": "Invalid namespace format."})
		return
	case port != "" && (err != nil || n < 1 || n > 65535):
		writeJSON(w, 400, map[string]string{"detail": "Invalid port format."})
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, r.Clone(context.Background()))
	f.mu.Unlock()
	if f.hook != nil && f.hook(w, r) {
		return
	}
	for k := range r.Header {
		if strings.HasPrefix(k, "X-Sandbox-") {
			r.Header.Del(k)
		}
	}
	f.next.ServeHTTP(w, r)
}

func dnsLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// checkHeaders asserts every request carried the target's routing headers.
func (f *fakeRouter) checkHeaders(t *testing.T, tg conn.Target, port string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.requests {
		h := r.Header
		if h.Get("X-Sandbox-ID") != tg.SandboxName || h.Get("X-Sandbox-Namespace") != tg.Namespace || h.Get("X-Sandbox-Port") != port {
			t.Errorf("%s %s: router headers %v, want sandbox %s/%s port %s", r.Method, r.URL.Path, h, tg.Namespace, tg.SandboxName, port)
		}
		if want := podIPHeader(tg); h.Get("X-Sandbox-Pod-IP") != want {
			t.Errorf("%s %s: X-Sandbox-Pod-IP %q, want %q", r.Method, r.URL.Path, h.Get("X-Sandbox-Pod-IP"), want)
		}
		if s, err := strconv.ParseFloat(h.Get("X-Sandbox-Timeout"), 64); err != nil || s <= 0 || s > 70 {
			t.Errorf("%s %s: X-Sandbox-Timeout %q, want the call's timeout in seconds", r.Method, r.URL.Path, h.Get("X-Sandbox-Timeout"))
		}
	}
}

// podIPHeader is the first IPv4 pod IP, else the first one, else nothing.
func podIPHeader(tg conn.Target) string {
	for _, ip := range tg.PodIPs {
		if !strings.Contains(ip, ":") {
			return ip
		}
	}
	if len(tg.PodIPs) > 0 {
		return tg.PodIPs[0]
	}
	return ""
}

func (f *fakeRouter) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// noRouterHeaders wraps a runtime reached without a router: nothing may send X-Sandbox-*.
func noRouterHeaders(t *testing.T, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k := range r.Header {
			if strings.HasPrefix(k, "X-Sandbox-") {
				t.Errorf("in-cluster request carries router header %s", k)
			}
		}
		next.ServeHTTP(w, r)
	})
}

func mustNew(t testing.TB, cfg conn.Config, gw conn.GatewayResolver) conn.Conn {
	t.Helper()
	c, err := conn.New(cfg, gw)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// routedTarget has a Sandbox name unlike any claim name, as after a warm-pool adoption.
var routedTarget = conn.Target{Namespace: "team-a", SandboxName: "pool-x7k2p", PodIPs: []string{"10.9.9.9"}}

// startRouted serves runtime behind router under a path prefix.
func startRouted(t *testing.T, hook func(http.ResponseWriter, *http.Request) bool) (*httptest.Server, *fakeRouter) {
	router := &fakeRouter{next: newFakeRuntime(t).handler(), hook: hook}
	mux := http.NewServeMux()
	mux.Handle("/sandbox-router/", http.StripPrefix("/sandbox-router", router))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, router
}

func TestDirectConformance(t *testing.T) {
	t.Parallel() // each suite has its own fake and directories; they mostly wait on processes
	conntest.Run(t, func(t *testing.T) (conn.Conn, conn.Target) {
		srv, router := startRouted(t, nil)
		c := mustNew(t, conn.Config{Type: conn.TypeDirect, APIURL: srv.URL + "/sandbox-router/", ServerPort: 8888}, nil)
		t.Cleanup(func() { router.checkHeaders(t, routedTarget, "8888") })
		return c, routedTarget
	})
}

// fakeGateway hands out addresses in order (the last one repeats) and counts lookups.
type fakeGateway struct {
	t     *testing.T
	addrs []string
	err   error

	mu    sync.Mutex
	calls int
}

func (g *fakeGateway) GatewayAddress(_ context.Context, namespace, name string, wait time.Duration) (string, error) {
	if namespace != "gw-ns" || name != "sandbox-gw" || wait != 42*time.Second {
		g.t.Errorf("GatewayAddress(%q, %q, %s), want gw-ns, sandbox-gw, 42s", namespace, name, wait)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	if g.err != nil {
		return "", g.err
	}
	return g.addrs[min(g.calls, len(g.addrs))-1], nil
}

func (g *fakeGateway) lookups() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

func gatewayConfig(port int) conn.Config {
	return conn.Config{Type: conn.TypeGateway, GatewayName: "sandbox-gw", GatewayNamespace: "gw-ns",
		GatewayReadyTimeout: 42 * time.Second, ServerPort: port}
}

func TestGatewayConformance(t *testing.T) {
	t.Parallel() // each suite has its own fake and directories; they mostly wait on processes
	conntest.Run(t, func(t *testing.T) (conn.Conn, conn.Target) {
		router := &fakeRouter{next: newFakeRuntime(t).handler()}
		srv := httptest.NewServer(router)
		t.Cleanup(srv.Close)
		gw := &fakeGateway{t: t, addrs: []string{srv.Listener.Addr().String()}}
		c := mustNew(t, gatewayConfig(9999), gw)
		t.Cleanup(func() {
			router.checkHeaders(t, routedTarget, "9999")
			if n, used := gw.lookups(), router.count() > 0; used && n != 1 || !used && n != 0 {
				t.Errorf("gateway looked up %d times for %d requests, want once (cached)", n, router.count())
			}
		})
		return c, routedTarget
	})
}

func TestInClusterPodIPConformance(t *testing.T) {
	t.Parallel() // each suite has its own fake and directories; they mostly wait on processes
	conntest.Run(t, func(t *testing.T) (conn.Conn, conn.Target) {
		srv := httptest.NewServer(noRouterHeaders(t, newFakeRuntime(t).handler()))
		t.Cleanup(srv.Close)
		port := srv.Listener.Addr().(*net.TCPAddr).Port
		c := mustNew(t, conn.Config{Type: conn.TypeInCluster, UsePodIP: true, ServerPort: port}, nil)
		// The first IPv4 address wins over an earlier IPv6 one.
		return c, conn.Target{Namespace: "ns", SandboxName: "sbx", PodIPs: []string{"fd00::7", "127.0.0.1"}}
	})
}

func TestInClusterDNSConformance(t *testing.T) {
	t.Parallel() // each suite has its own fake and directories; they mostly wait on processes
	conntest.Run(t, func(t *testing.T) (conn.Conn, conn.Target) {
		var served atomic.Int32
		rt := noRouterHeaders(t, newFakeRuntime(t).handler())
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served.Add(1)
			rt.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		port := srv.Listener.Addr().(*net.TCPAddr).Port
		dns := startFakeDNS(t, map[string]string{"pool-x7k2p.team-a.svc.cluster.test.": "127.0.0.1"})
		c := mustNew(t, conn.Config{Type: conn.TypeInCluster, ServerPort: port, ClusterDomain: "cluster.test", DNSServer: dns.addr}, nil)
		t.Cleanup(func() {
			if served.Load() > 0 && dns.asked("pool-x7k2p.team-a.svc.cluster.test.") == 0 {
				t.Error("the configured DNS server was never asked for <sandbox>.<ns>.svc.<domain>")
			}
		})
		// Pod IPs are ignored without UsePodIP: no fallback between the two.
		return c, conn.Target{Namespace: "team-a", SandboxName: "pool-x7k2p", PodIPs: []string{"192.0.2.1"}}
	})
}
