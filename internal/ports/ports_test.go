package ports

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

type fakeClaims struct {
	mu   sync.Mutex
	gone map[string]bool
}

func (f *fakeClaims) Get(_ context.Context, ns, name, owner string) (kube.Claim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone[name] || owner != "alice" {
		return kube.Claim{}, fmt.Errorf("claim %q: %w", name, kube.ErrNotFound)
	}
	return kube.Claim{Namespace: ns, Name: name, SandboxName: name + "-sbx"}, nil
}

// fakePorter sends every port to the test's "sandbox" server, with a routing header.
type fakePorter struct{ base *url.URL }

func (p fakePorter) Port(_ context.Context, t conn.Target, port int) (conn.PortEndpoint, error) {
	h := http.Header{}
	h.Set("X-Sandbox-Port", fmt.Sprint(port))
	h.Set("X-Sandbox-ID", t.SandboxName)
	return conn.PortEndpoint{Base: p.base, Header: h, Transport: http.DefaultTransport}, nil
}

func setup(t *testing.T) (*Registry, *fakeClaims) {
	t.Helper()
	release := make(chan struct{})
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stream": // the rest only once the client has read the first line
			fmt.Fprint(w, "line 0\n")
			w.(http.Flusher).Flush()
			<-release
			fmt.Fprint(w, "line 1\nline 2\n")
			return
		case "/release":
			close(release)
			return
		}
		fmt.Fprintf(w, "path=%s query=%s port=%s id=%s auth=%q podip=%q", r.URL.Path, r.URL.RawQuery, r.Header.Get("X-Sandbox-Port"),
			r.Header.Get("X-Sandbox-ID"), r.Header.Get("Authorization"), r.Header.Get("X-Sandbox-Pod-IP"))
	}))
	t.Cleanup(app.Close)
	u, _ := url.Parse(app.URL)
	claims := &fakeClaims{gone: map[string]bool{}}
	r := New(claims, fakePorter{base: u}, func(ctx context.Context) string { p, _ := ctx.Value(principalKey{}).(string); return p }, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go r.Run(ctx)
	return r, claims
}

type principalKey struct{}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer secret")
	req.Header.Set("X-Sandbox-Pod-IP", "10.0.0.99") // a caller must not choose where the router goes
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestExposeOverHTTP(t *testing.T) {
	r, claims := setup(t)
	srv := httptest.NewServer(r.Handler())
	t.Cleanup(srv.Close)
	r.SetBase(srv.URL + "/")
	ctx := context.Background()
	u, err := r.Expose(ctx, "alice", "ns", "c1", 8080)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := r.Expose(ctx, "alice", "ns", "c1", 8080); again != u || !strings.HasPrefix(u, srv.URL+PathPrefix) {
		t.Fatalf("urls %q then %q", u, again)
	}
	code, body := get(t, u+"a/b?x=1")
	if want := `path=/a/b query=x=1 port=8080 id=c1-sbx auth="" podip=""`; code != 200 || body != want {
		t.Errorf("proxied: %d %q, want %q", code, body, want)
	}
	resp, err := http.Get(u + "stream")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || sc.Text() != "line 0" { // a buffering proxy would hold it back: the test then hangs
		t.Fatalf("first streamed line %q", sc.Text())
	}
	get(t, u+"release")
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	resp.Body.Close()
	if len(lines) != 2 {
		t.Errorf("streamed after the first line: %q", lines)
	}
	if code, _ := get(t, srv.URL+PathPrefix+"nope/"); code != http.StatusNotFound {
		t.Errorf("unknown token: %d", code)
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.Handler().ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), principalKey{}, "mallory")))
	}))
	t.Cleanup(other.Close)
	if code, _ := get(t, strings.Replace(u, srv.URL, other.URL, 1)); code != http.StatusNotFound {
		t.Errorf("another principal used the URL: %d", code)
	}
	if _, err := r.Expose(ctx, "bob", "ns", "c1", 8080); err == nil {
		t.Error("another owner exposed alice's sandbox")
	}
	claims.mu.Lock()
	claims.gone["c1"] = true
	claims.mu.Unlock()
	if code, body := get(t, u); code != http.StatusGone || !strings.Contains(body, "is gone") {
		t.Errorf("deleted sandbox: %d %q", code, body)
	}
	if r.Unexpose("alice", "ns", "c1", 8080) {
		t.Error("the exposure of a deleted sandbox outlived the request that found it gone")
	}
}

func TestExposeOverLoopback(t *testing.T) {
	r, _ := setup(t)
	ctx := context.Background()
	u, err := r.Expose(ctx, "alice", "ns", "c2", 3000)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("stdio url %q", u)
	}
	if code, body := get(t, u+"x"); code != 200 || !strings.HasPrefix(body, "path=/x ") {
		t.Errorf("proxied: %d %q", code, body)
	}
	root := u[:strings.Index(u[len("http://"):], "/")+len("http://")+1]
	if code, _ := get(t, root+"x"); code != http.StatusNotFound {
		t.Errorf("without the token: %d", code)
	}
	req, _ := http.NewRequest(http.MethodGet, u+"x", nil)
	req.Host = "evil.example:80" // a web page's request after DNS rebinding
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("foreign Host: %v %v", resp, err)
	}
	if !r.Unexpose("alice", "ns", "c2", 0) {
		t.Fatal("unexpose found nothing")
	}
	if _, err := http.Get(u); err == nil {
		t.Error("the listener still answers after unexpose_port")
	}
}

func TestExposeCap(t *testing.T) {
	r, _ := setup(t)
	r.SetBase("http://server")
	for i := range MaxPerOwner {
		if _, err := r.Expose(context.Background(), "alice", "ns", "c", 1000+i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Expose(context.Background(), "alice", "ns", "c", 99); err == nil || !strings.Contains(err.Error(), "unexpose_port") {
		t.Errorf("over the cap: %v", err)
	}
}
