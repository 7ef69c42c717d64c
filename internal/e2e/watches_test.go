//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// floodNamespaces is how many made-up namespaces the flood sends (the count of issue 14).
const floodNamespaces = 2000

// TestNamespaceFloodStartsNoWatches is the regression test of issue 14, finding 1: execute_command
// on 2,000 made-up namespaces took the server from 80 MB to 452 MB and the API server from 203
// to 2,203 watches on sandboxclaims and sandboxes. The server reaches the API server through a
// loopback proxy that sees exactly its requests, so the watch count is its own, whatever other
// tests do on the shared stack meanwhile.
func TestNamespaceFloodStartsNoWatches(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	proxy := newAPIProxy(t)
	cmd, base := startServer(t, append(connections()[4].env, "KUBECONFIG="+proxy.kubeconfig)) // sandboxd pod IP
	cs := httpSession(t, base, "2025-11-25")

	// A real sandbox: its namespace is the one the server should watch.
	created := call[createResult](t, cs, "create_sandbox", map[string]any{"warmpool": "sandboxd-pool", "namespace": ns.Name})
	claim := map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name}
	exec := map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name, "command": "echo ok"}
	if ex := call[execResult](t, cs, "execute_command", exec); ex.Stdout != "ok\n" {
		t.Fatalf("exec before the flood: %+v", ex)
	}
	want := map[string]int{"sandboxclaims " + ns.Name: 1, "sandboxes " + ns.Name: 1}
	proxy.waitWatches(t, want)
	rssBefore := rssKB(t, cmd.Process.Pid)
	apiBefore := apiserverWatches(t)
	opened := proxy.watchesOpened()

	flood(t, cs, floodNamespaces, func(i int) string {
		return fmt.Sprintf("Sandbox claim %q is not found in namespace %q. It may have been deleted or expired (shutdown_after_seconds); "+
			"list_sandboxes lists your sandboxes; create_sandbox makes a new one.", "nope", fmt.Sprintf("ns-%d", i))
	})

	if n := proxy.watchesOpened() - opened; n != 0 {
		t.Errorf("the flood opened %d watches; want none", n)
	}
	if got := proxy.openWatches(); !maps.Equal(got, want) {
		t.Errorf("open watches after the flood: %s, want %v", summary(got), want)
	}
	rssAfter := rssKB(t, cmd.Process.Pid)
	apiAfter := apiserverWatches(t)
	t.Logf("%d made-up namespaces: server RSS %d → %d MB; API server WATCH requests (all clients) sandboxclaims %d → %d, sandboxes %d → %d",
		floodNamespaces, rssBefore/1024, rssAfter/1024, apiBefore["sandboxclaims"], apiAfter["sandboxclaims"], apiBefore["sandboxes"], apiAfter["sandboxes"])
	// The finding added 186 MB per 1,000 namespaces; a flood that costs nothing that stays may
	// still grow the heap's high-water mark a little.
	if rssAfter-rssBefore > 48*1024 {
		t.Errorf("server RSS grew from %d to %d MB", rssBefore/1024, rssAfter/1024)
	}
	// The API server's counts are shared with concurrent tests: only a flood-sized jump is ours.
	for _, r := range []string{"sandboxclaims", "sandboxes"} {
		if d := apiAfter[r] - apiBefore[r]; d >= floodNamespaces/10 {
			t.Errorf("API server watches on %s grew by %d during the flood", r, d)
		}
	}
	// The real sandbox still answers, from the cache.
	if ex := call[execResult](t, cs, "execute_command", exec); ex.Stdout != "ok\n" {
		t.Errorf("exec after the flood: %+v", ex)
	}
	call[struct{}](t, cs, "delete_sandbox", claim)
}

// TestAllowlistRefusesBeforeTheAPI: with K8S_SANDBOX_ALLOWED_NAMESPACES, a namespace outside
// the list never reaches the Kubernetes API (so neither the cache nor a watch).
func TestAllowlistRefusesBeforeTheAPI(t *testing.T) {
	t.Parallel()
	proxy := newAPIProxy(t)
	_, base := startServer(t, append(connections()[4].env, "KUBECONFIG="+proxy.kubeconfig, "K8S_SANDBOX_ALLOWED_NAMESPACES=only-this"))
	cs := httpSession(t, base, "2025-11-25")
	flood(t, cs, 200, func(i int) string {
		return fmt.Sprintf("namespace %q is not allowed on this server; use one of: only-this", fmt.Sprintf("ns-%d", i))
	})
	for ns, n := range proxy.namespacedRequests() {
		if strings.HasPrefix(ns, "ns-") {
			t.Errorf("refused namespace %s reached the API %d times", ns, n)
		}
	}
	if n := proxy.watchesOpened(); n != 0 {
		t.Errorf("%d watches opened", n)
	}
}

// flood calls execute_command on a made-up claim in n made-up namespaces, four at a time, and
// checks each error text.
func flood(t *testing.T, cs *mcp.ClientSession, n int, want func(i int) string) {
	t.Helper()
	var (
		mu   sync.Mutex
		bad  []string
		wg   sync.WaitGroup
		next = make(chan int)
	)
	start := time.Now()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_command", Arguments: map[string]any{
					"sandbox_claim_name": "nope", "namespace": fmt.Sprintf("ns-%d", i), "command": "x"}})
				cancel()
				var got string
				switch {
				case err != nil:
					got = "protocol error: " + err.Error()
				case !res.IsError:
					got = "success"
				default:
					got = resultText(res)
				}
				if got != want(i) {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("ns-%d: %s", i, got))
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	t.Logf("%d calls in %s", n, time.Since(start).Round(time.Millisecond))
	if len(bad) > 0 {
		t.Fatalf("%d of %d calls answered otherwise, e.g. %s", len(bad), n, bad[0])
	}
}

// apiProxy forwards one server's Kubernetes requests to the stack's API server with the
// admin credentials, counting its watches and the namespaces it asks about.
type apiProxy struct {
	kubeconfig string

	mu     sync.Mutex
	open   map[string]int // "resource namespace" → watches in flight
	opened int
	perNS  map[string]int // namespace → requests
}

func newAPIProxy(t *testing.T) *apiProxy {
	t.Helper()
	target, err := url.Parse(stack.RestConfig.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(stack.RestConfig)
	if err != nil {
		t.Fatal(err)
	}
	p := &apiProxy{open: map[string]int{}, perNS: map[string]int{}}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     transport,
		FlushInterval: -1, // watch events pass at once
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ns, resource := namespaceAndResource(r.URL.Path)
		watch := r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1"
		key := resource + " " + ns
		p.mu.Lock()
		if ns != "" {
			p.perNS[ns]++
		}
		if watch {
			p.opened++
			p.open[key]++
		}
		p.mu.Unlock()
		defer func() {
			if watch {
				p.mu.Lock()
				if p.open[key]--; p.open[key] == 0 {
					delete(p.open, key)
				}
				p.mu.Unlock()
			}
		}()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: srv.URL}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy", Namespace: "default"}
	cfg.CurrentContext = "proxy"
	p.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return p
}

// namespaceAndResource reads /api(s)/.../namespaces/<ns>/<resource>[/...].
func namespaceAndResource(path string) (string, string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "namespaces" {
			if i+2 < len(parts) {
				return parts[i+1], parts[i+2]
			}
			return "", "namespaces"
		}
	}
	if len(parts) > 0 {
		return "", parts[len(parts)-1]
	}
	return "", ""
}

func (p *apiProxy) openWatches() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.open {
		out[k] = v
	}
	return out
}

func (p *apiProxy) watchesOpened() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.opened
}

func (p *apiProxy) namespacedRequests() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.perNS {
		out[k] = v
	}
	return out
}

// waitWatches waits until the server's open watches are exactly want (the cache starts them
// in the background).
func (p *apiProxy) waitWatches(t *testing.T, want map[string]int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !maps.Equal(p.openWatches(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("open watches %s, want %v", summary(p.openWatches()), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// summary keeps a failure message short when a flood left thousands of watches.
func summary(m map[string]int) string {
	keys := slices.Sorted(maps.Keys(m))
	if len(keys) > 6 {
		return fmt.Sprintf("%d entries (%s, ...)", len(keys), strings.Join(keys[:6], ", "))
	}
	return fmt.Sprint(m)
}

// rssKB reads VmRSS of a process.
func rssKB(t *testing.T, pid int) int { return statusKB(t, pid, "VmRSS") }

// peakRSSKB reads VmHWM, the most a process has had resident.
func peakRSSKB(t *testing.T, pid int) int { return statusKB(t, pid, "VmHWM") }

// statusKB reads one kB figure of /proc/PID/status.
func statusKB(t *testing.T, pid int, key string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("%s %q: %v", key, v, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/PID/status", key)
	return 0
}

// apiserverWatches reads apiserver_longrunning_requests{verb="WATCH"} per resource from the
// API server's /metrics (all clients).
func apiserverWatches(t *testing.T) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := stack.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("reading the API server metrics: %v", err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_longrunning_requests{") || !strings.Contains(line, `verb="WATCH"`) {
			continue
		}
		labels, value, _ := strings.Cut(line, "} ")
		for _, r := range []string{"sandboxclaims", "sandboxes"} {
			if strings.Contains(labels, `resource="`+r+`"`) {
				n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
				if err != nil {
					t.Fatalf("metric line %q: %v", line, err)
				}
				out[r] += int(n)
			}
		}
	}
	return out
}
