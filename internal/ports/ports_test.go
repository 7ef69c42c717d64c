package ports

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/readgate"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/token"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// fakeStore keeps exposures like kube.Client does on the claims: alice owns every claim.
type fakeStore struct {
	mu      sync.Mutex
	lagging bool // the cache has not seen the exposures yet: only a fresh read has them
	gone    map[string]bool
	exposed map[string]map[int]kube.Exposure
	// watchLag keeps cached reads on the exposures an Unexpose removed for this long, as a
	// watch shows a change a little after the API has it.
	watchLag   time.Duration
	before     map[string]map[int]kube.Exposure
	staleUntil time.Time
	unexposes  int // Unexpose calls that found the claim
	// cacheBypassed: cached reads go to the API, as kube.Client's do for a claim this process
	// has just patched.
	cacheBypassed bool
	// apiReads counts the reads kube.Client would send to the API: fresh ones, and those of a
	// claim the cache does not hold.
	apiReads int
}

func (f *fakeStore) owned(name, owner string) error {
	if f.gone[name] || owner != "alice" {
		return fmt.Errorf("claim %q: %w", name, kube.ErrNotFound)
	}
	return nil
}

func (f *fakeStore) Expose(_ context.Context, ns, name, owner string, port int, principal, th string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.owned(name, owner); err != nil {
		return err
	}
	if f.exposed[name] == nil {
		f.exposed[name] = map[int]kube.Exposure{}
	}
	e := f.exposed[name][port]
	f.exposed[name][port] = kube.Exposure{Principal: principal, Tokens: append(e.Tokens, th)}
	return nil
}

func (f *fakeStore) Unexpose(_ context.Context, ns, name, owner string, port int) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.owned(name, owner); err != nil {
		return false, err
	}
	f.unexposes++
	n := len(f.exposed[name])
	if f.watchLag > 0 {
		f.before = map[string]map[int]kube.Exposure{name: maps.Clone(f.exposed[name])}
		f.staleUntil = time.Now().Add(f.watchLag)
	}
	for p := range f.exposed[name] {
		if port == 0 || p == port {
			delete(f.exposed[name], p)
		}
	}
	return n > len(f.exposed[name]), nil
}

func (f *fakeStore) Exposed(_ context.Context, ns, name string, fresh bool) (kube.Claim, map[int]kube.Exposure, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fresh || f.gone[name] || f.cacheBypassed {
		f.apiReads++
	}
	if err := f.owned(name, "alice"); err != nil {
		return kube.Claim{}, nil, err
	}
	if old, ok := f.before[name]; ok && !fresh && time.Now().Before(f.staleUntil) {
		return kube.Claim{Namespace: ns, Name: name, SandboxName: name + "-sbx"}, maps.Clone(old), nil
	}
	if f.lagging && !fresh {
		return kube.Claim{Namespace: ns, Name: name, SandboxName: name + "-sbx"}, nil, nil
	}
	return kube.Claim{Namespace: ns, Name: name, SandboxName: name + "-sbx"}, maps.Clone(f.exposed[name]), nil
}

// fakePorter sends every port to the test's "sandbox" server, with a routing header; its
// runtime is driven on 8888 and 9090.
type fakePorter struct{ base *url.URL }

func (fakePorter) ControlPorts() []conn.ControlPort {
	return []conn.ControlPort{
		{Port: 8888, What: "the sandbox runtime's control port (it runs commands)", Hands: "command execution"},
		{Port: 9090, What: "sandboxd's gRPC port (it runs commands)", Hands: "command execution"},
	}
}

func (p fakePorter) Port(_ context.Context, t conn.Target, port int) (conn.PortEndpoint, error) {
	h := http.Header{}
	h.Set("X-Sandbox-Port", fmt.Sprint(port))
	h.Set("X-Sandbox-ID", t.SandboxName)
	return conn.PortEndpoint{Base: p.base, Header: h, Transport: http.DefaultTransport}, nil
}

// setup returns two replicas of the server sharing one store (the claims), and the store.
func setup(t *testing.T) (*Registry, *Registry, *fakeStore) {
	t.Helper()
	release := make(chan struct{})
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stream": // the rest only once the client has read the first line
			fmt.Fprint(w, "line 0\n")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done(): // the proxy ended the stream
				return
			}
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
	store := &fakeStore{gone: map[string]bool{}, exposed: map[string]map[int]kube.Exposure{}}
	principal := func(ctx context.Context) string { p, _ := ctx.Value(principalKey{}).(string); return p }
	r1 := New(store, fakePorter{base: u}, principal, zerolog.Nop())
	r2 := New(store, fakePorter{base: u}, principal, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go r1.Run(ctx)
	go r2.Run(ctx)
	return r1, r2, store
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

// serveHTTP mounts a replica's handler the way the HTTP server does.
func serveHTTP(t *testing.T, r *Registry) string {
	srv := httptest.NewServer(r.Handler())
	t.Cleanup(srv.Close)
	r.SetBase(srv.URL + "/")
	return srv.URL
}

func TestExposeOverHTTP(t *testing.T) {
	r1, r2, store := setup(t)
	url1, url2 := serveHTTP(t, r1), serveHTTP(t, r2)
	ctx := context.Background()
	u, err := r1.Expose(ctx, "alice", "ns", "c1", 8080)
	if err != nil {
		t.Fatal(err)
	}
	if want := url1 + PathPrefix + "ns/c1/8080/"; !strings.HasPrefix(u, want) {
		t.Fatalf("url %q, want it under %q", u, want)
	}
	// Any replica serves it: the exposure lives on the claim.
	onR2 := strings.Replace(u, url1, url2, 1)
	code, body := get(t, onR2+"a/b?x=1")
	if want := `path=/a/b query=x=1 port=8080 id=c1-sbx auth="" podip=""`; code != 200 || body != want {
		t.Errorf("proxied: %d %q, want %q", code, body, want)
	}
	again, err := r2.Expose(ctx, "alice", "ns", "c1", 8080)
	if err != nil || again == strings.Replace(u, url1, url2, 1) {
		t.Fatalf("second expose: %q %v", again, err)
	}
	for _, x := range []string{u, again} {
		if code, _ := get(t, x); code != 200 {
			t.Errorf("%s after a second expose_port: %d", x, code)
		}
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
	bad := []string{
		url1 + PathPrefix + "nope/",
		url1 + PathPrefix + "ns/c1/8080/wrongtoken/",
		strings.Replace(u, "/8080/", "/8081/", 1), // the token of another port
		strings.Replace(u, "/c1/", "/c9/", 1),
	}
	for _, x := range bad {
		if code, body := get(t, x); code != http.StatusNotFound || body != notExposed+"\n" {
			t.Errorf("%s: %d %q", x, code, body)
		}
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r1.Handler().ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), principalKey{}, "mallory")))
	}))
	t.Cleanup(other.Close)
	if code, _ := get(t, strings.Replace(u, url1, other.URL, 1)); code != http.StatusNotFound {
		t.Errorf("another principal used the URL: %d", code)
	}
	if _, err := r1.Expose(ctx, "bob", "ns", "c1", 8080); err == nil {
		t.Error("another owner exposed alice's sandbox")
	}
	store.mu.Lock()
	store.gone["c1"] = true
	store.mu.Unlock()
	if code, _ := get(t, u); code != http.StatusNotFound {
		t.Errorf("deleted sandbox: %d", code)
	}
}

// A URL just exposed through another replica works before this replica's cache has it.
func TestExposedElsewhereAMomentAgo(t *testing.T) {
	r1, r2, store := setup(t)
	url1, url2 := serveHTTP(t, r1), serveHTTP(t, r2)
	u, err := r1.Expose(context.Background(), "alice", "ns", "c4", 8080)
	if err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	store.lagging = true
	store.mu.Unlock()
	if code, _ := get(t, strings.Replace(u, url1, url2, 1)); code != http.StatusOK {
		t.Errorf("through the other replica while its cache lags: %d", code)
	}
	// That read refused nothing, so it does not hide the next URL once the cache has it.
	store.mu.Lock()
	store.lagging = false
	store.mu.Unlock()
	next, err := r1.Expose(context.Background(), "alice", "ns", "c4", 8081)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, strings.Replace(next, url1, url2, 1)); code != http.StatusOK {
		t.Errorf("the next URL through the other replica: %d", code)
	}
}

// An exposure ended through one replica ends the streams another replica is proxying.
func TestUnexposeEndsStreamsEverywhere(t *testing.T) {
	r1, r2, _ := setup(t)
	url1, url2 := serveHTTP(t, r1), serveHTTP(t, r2)
	u, err := r1.Expose(context.Background(), "alice", "ns", "c3", 8080)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(strings.Replace(u, url1, url2, 1) + "stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() {
		t.Fatal("no first line")
	}
	if found, err := r1.Unexpose(context.Background(), "alice", "ns", "c3", 0); !found || err != nil {
		t.Fatalf("unexpose: %v %v", found, err)
	}
	r2.check(context.Background()) // what its Run does every checkEvery
	if sc.Scan() {
		t.Errorf("the stream on the other replica went on: %q", sc.Text())
	}
	if code, _ := get(t, strings.Replace(u, url1, url2, 1)); code != http.StatusNotFound {
		t.Errorf("after unexpose_port: %d", code)
	}
}

func TestExposeOverLoopback(t *testing.T) {
	r, _, _ := setup(t)
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
	if again, _ := r.Expose(ctx, "alice", "ns", "c2", 3000); !strings.HasPrefix(again, root) || again == u {
		t.Errorf("second expose over stdio: %q, want a new token on %s", again, root)
	}
	req, _ := http.NewRequest(http.MethodGet, u+"x", nil)
	req.Host = "evil.example:80" // a web page's request after DNS rebinding
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("foreign Host: %v %v", resp, err)
	}
	if found, err := r.Unexpose(ctx, "alice", "ns", "c2", 0); !found || err != nil {
		t.Fatalf("unexpose: %v %v", found, err)
	}
	if _, err := http.Get(u); err == nil {
		t.Error("the listener still answers after unexpose_port")
	}
}

// A cache that has not caught up with an exposure yet ends nothing: check confirms with the API.
func TestCheckDoesNotEndWhatALaggingCacheMisses(t *testing.T) {
	r, _, store := setup(t)
	u, err := r.Expose(context.Background(), "alice", "ns", "c5", 3000)
	if err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	store.lagging = true
	store.mu.Unlock()
	r.check(context.Background())
	if code, body := get(t, u+"x"); code != 200 || !strings.HasPrefix(body, "path=/x ") {
		t.Errorf("after a check against a lagging cache: %d %q", code, body)
	}
	if found, err := r.Unexpose(context.Background(), "alice", "ns", "c5", 0); !found || err != nil {
		t.Fatalf("unexpose: %v %v", found, err)
	}
}

// The runtime's own ports are refused with the reason, before anything is recorded on the claim.
func TestExposeRefusesControlPorts(t *testing.T) {
	r, _, store := setup(t)
	for _, tc := range []struct {
		port int
		want string // "" means exposed
	}{
		{8888, "port 8888 is the sandbox runtime's control port (it runs commands); exposing it would hand out command execution — expose your application's port instead: " +
			"run it on a port this server does not reserve (not 8888, 9090), listening on 0.0.0.0, and expose that one"},
		{9090, "port 9090 is sandboxd's gRPC port (it runs commands)"},
		{8080, ""},
	} {
		t.Run(fmt.Sprint(tc.port), func(t *testing.T) {
			_, err := r.Expose(context.Background(), "alice", "ns", "c6", tc.port)
			var cpe *ControlPortError
			if tc.want == "" {
				if err != nil {
					t.Fatalf("expose %d: %v", tc.port, err)
				}
				return
			}
			if !errors.As(err, &cpe) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("expose %d: %v, want %q", tc.port, err, tc.want)
			}
			store.mu.Lock()
			defer store.mu.Unlock()
			if _, ok := store.exposed["c6"][tc.port]; ok {
				t.Errorf("port %d was recorded on the claim", tc.port)
			}
		})
	}
}

// An exposure of a control port recorded on the claim before it was refused (an older server,
// other settings) is not served: the port's reason, not the runtime's answer.
func TestServeRefusesControlPorts(t *testing.T) {
	r, _, store := setup(t)
	base := serveHTTP(t, r)
	if err := store.Expose(context.Background(), "ns", "c6", "alice", 9090, "", token.Hash("old-token")); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, base+PathPrefix+"ns/c6/9090/old-token/v1/files/etc/passwd")
	if code != http.StatusForbidden || !strings.HasPrefix(body, "port 9090 is sandboxd's gRPC port") || strings.Contains(body, "path=") {
		t.Errorf("a recorded exposure of 9090: %d %q", code, body)
	}
	if code, body := get(t, base+PathPrefix+"ns/c6/8080/old-token/x"); code != http.StatusNotFound {
		t.Errorf("another port, not exposed: %d %q", code, body)
	}
}

// A flood of wrong tokens, or of a name with no claim, costs one API read per claim per
// readgate.ReadFor, not one per request; a URL the cache knows keeps working through it.
func TestWrongTokensCostOneReadPerClaim(t *testing.T) {
	const requests = 300
	for _, tc := range []struct {
		name          string
		claim         string
		cacheBypassed bool
		workers       int // sending the flood at once
		maxReads      int // for the whole flood, and as many again after ReadFor
	}{
		{"wrong token of an exposed port", "c7", false, 1, 1},
		{"claim that is not there", "c8", false, 1, 1},
		{"wrong token right after this replica exposed the port", "c7", true, 1, 2},
		{"wrong tokens at once", "c7", false, 20, 1},
		{"claim that is not there, at once", "c8", false, 20, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _, store := setup(t)
			base := serveHTTP(t, r)
			clock := clocktesting.NewFakeClock(time.Now())
			r.gate = readgate.NewWithClock(r.readClaim, clock)
			good, err := r.Expose(context.Background(), "alice", "ns", "c7", 8080)
			if err != nil {
				t.Fatal(err)
			}
			store.mu.Lock()
			store.gone["c8"] = true
			store.cacheBypassed = tc.cacheBypassed
			store.apiReads = 0
			store.mu.Unlock()
			reads := func() int { store.mu.Lock(); defer store.mu.Unlock(); return store.apiReads }
			wrong := fmt.Sprintf("%s%sns/%s/8080/", base, PathPrefix, tc.claim)
			var wg sync.WaitGroup
			codes := make([]int, requests)
			for w := range tc.workers {
				wg.Go(func() {
					for i := w; i < requests; i += tc.workers {
						resp, err := http.Get(fmt.Sprintf("%swrong-%d/", wrong, i))
						if err == nil {
							codes[i] = resp.StatusCode
							resp.Body.Close()
						}
					}
				})
			}
			wg.Wait()
			for i, code := range codes {
				if code != http.StatusNotFound {
					t.Fatalf("wrong token %d: %d", i, code)
				}
			}
			if n := reads(); n > tc.maxReads {
				t.Errorf("%d wrong tokens cost %d API reads, want at most %d", requests, n, tc.maxReads)
			}
			if code, _ := get(t, good+"x"); code != http.StatusOK {
				t.Errorf("the exposed URL during the flood: %d", code)
			}
			store.mu.Lock()
			store.apiReads = 0
			store.mu.Unlock()
			clock.Step(readgate.ReadFor + time.Millisecond)
			get(t, wrong+"wrong-again/")
			if n := reads(); n == 0 || n > tc.maxReads {
				t.Errorf("after readFor: %d API reads, want 1 to %d", n, tc.maxReads)
			}
			again, err := r.Expose(context.Background(), "alice", "ns", "c7", 8080)
			if err != nil {
				t.Fatal(err)
			}
			if code, _ := get(t, again+"x"); code != http.StatusOK {
				t.Errorf("a URL exposed through this replica after the flood: %d", code)
			}
		})
	}
}

// A stream held open by the app is cut within StreamsEndWithin of unexpose_port, through the
// replica that ended it and through another whose watch shows the change late.
func TestUnexposeCutsStreamsWithinTheBound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		other    bool          // the stream goes through the other replica
		watchLag time.Duration // how late that replica's cache sees the unexpose
	}{
		{"same replica", false, 0},
		{"other replica", true, 0},
		{"other replica, watch late", true, checkEvery},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &fakeStore{gone: map[string]bool{}, exposed: map[string]map[int]kube.Exposure{}, watchLag: tc.watchLag}
			cut := make(chan bool, 1) // whether the claim's record was gone when the app saw the cut
			app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, "open\n")
				w.(http.Flusher).Flush()
				<-r.Context().Done()
				store.mu.Lock()
				defer store.mu.Unlock()
				cut <- store.unexposes > 0
			}))
			t.Cleanup(app.Close)
			u, _ := url.Parse(app.URL)
			r1 := New(store, fakePorter{base: u}, nil, zerolog.Nop())
			r2 := New(store, fakePorter{base: u}, nil, zerolog.Nop())
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			go r1.Run(ctx)
			go r2.Run(ctx)
			url1, url2 := serveHTTP(t, r1), serveHTTP(t, r2)
			exposed, err := r1.Expose(ctx, "alice", "ns", "c9", 8080)
			if err != nil {
				t.Fatal(err)
			}
			if tc.other {
				exposed = strings.Replace(exposed, url1, url2, 1)
			}
			resp, err := http.Get(exposed + "hold")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			ended := make(chan struct{})
			go func() {
				defer close(ended)
				_, _ = io.Copy(io.Discard, resp.Body)
			}()
			if found, err := r1.Unexpose(ctx, "alice", "ns", "c9", 0); !found || err != nil {
				t.Fatalf("unexpose: %v %v", found, err)
			}
			// Generous against a slow machine; a stream that outlives the checks hangs here.
			wait := time.After(2*StreamsEndWithin + time.Second)
			select {
			case afterUnexpose := <-cut:
				if !afterUnexpose {
					t.Error("the stream was cut before unexpose_port removed the exposure")
				}
			case <-wait:
				t.Fatalf("the app's stream was still open %v after unexpose_port", 2*StreamsEndWithin+time.Second)
			}
			select {
			case <-ended:
			case <-wait:
				t.Fatal("the client's stream did not end")
			}
		})
	}
}
