package tools

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// fakeClaims keeps claims in memory, keyed by namespace/name, with their owner.
type fakeClaims struct {
	mu      sync.Mutex
	claims  map[string]kube.Claim
	owners  map[string]string
	created []kube.CreateRequest
	err     error         // returned by every call when set
	delay   time.Duration // how long Create takes
	stopped bool          // Status says not ready (the sandbox's pod went away)
	// principals holds each claim's principal label.
	principals map[string]string
	pools      map[string][]kube.Pool // Catalog's warm pools per namespace
	usage      map[string]kube.Usage  // Usage's figures per namespace/name (Claim is filled in)
	custom     []kube.CustomSpec      // EnsureCustomPool's requests
	collected  chan string            // CollectCustomPools' namespaces, when set
	audits     []string               // Audit's calls: "namespace/name principal tool outcome"
	resumes    int                    // Resume's calls
	resumeErr  error                  // returned by Resume when set
}

func newFakeClaims() *fakeClaims {
	return &fakeClaims{claims: map[string]kube.Claim{}, owners: map[string]string{}, principals: map[string]string{}}
}

func (f *fakeClaims) add(ns, name, owner string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claims[ns+"/"+name] = kube.Claim{Namespace: ns, Name: name, SandboxName: name + "-sbx", PodIPs: []string{"127.0.0.9"}, Ready: true}
	f.owners[ns+"/"+name] = owner
}

func (f *fakeClaims) Create(_ context.Context, req kube.CreateRequest) (kube.Claim, error) {
	if f.err != nil {
		return kube.Claim{}, f.err
	}
	f.mu.Lock()
	f.created = append(f.created, req)
	name := fmt.Sprintf("sandbox-claim-%08d", len(f.created))
	f.principals[req.Namespace+"/"+name] = req.Principal
	f.mu.Unlock()
	f.add(req.Namespace, name, req.Owner)
	if req.Posted != nil {
		req.Posted()
	}
	time.Sleep(f.delay) // the claim exists in the API while the create waits for readiness
	if req.Progress != nil {
		req.Progress("ready")
	}
	return f.Get(context.Background(), req.Namespace, name, req.Owner)
}

func (f *fakeClaims) Get(_ context.Context, ns, name, owner string) (kube.Claim, error) {
	if f.err != nil {
		return kube.Claim{}, f.err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.claims[ns+"/"+name]
	if !ok || f.owners[ns+"/"+name] != owner {
		return kube.Claim{}, fmt.Errorf("sandbox claim %q: %w", name, kube.ErrNotFound)
	}
	return c, nil
}

func (f *fakeClaims) List(_ context.Context, ns, owner string) ([]kube.Claim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []kube.Claim
	for k, c := range f.claims {
		if c.Namespace == ns && f.owners[k] == owner {
			out = append(out, c)
		}
	}
	return out, nil
}

func (f *fakeClaims) Catalog(_ context.Context, ns string) ([]kube.Pool, []kube.Template, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pools[ns], nil, nil
}

func (f *fakeClaims) Usage(ctx context.Context, ns, name, owner string) (kube.Usage, error) {
	c, err := f.Get(ctx, ns, name, owner)
	if err != nil {
		return kube.Usage{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.usage[ns+"/"+name]
	if !ok {
		u = kube.Usage{MetricsErr: fmt.Errorf("%w: metrics.k8s.io is not served by this cluster (no metrics-server)", kube.ErrNoMetrics)}
	}
	u.Claim = c
	return u, nil
}

func (f *fakeClaims) EnsureCustomPool(_ context.Context, ns string, spec kube.CustomSpec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if spec.BasePool == "missing" {
		return "", fmt.Errorf("%w: SandboxWarmPool %q in namespace %q", kube.ErrBaseMissing, spec.BasePool, ns)
	}
	f.custom = append(f.custom, spec)
	return "mcp-custom-0123456789abcdef", nil
}

func (f *fakeClaims) CollectCustomPools(_ context.Context, ns string, _ time.Duration) ([]string, error) {
	if f.collected != nil {
		f.collected <- ns
	}
	return nil, nil
}

func (f *fakeClaims) Audit(ns, name, _, principal, tool, outcome string, _ time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.audits = append(f.audits, fmt.Sprintf("%s/%s %s %s %s", ns, name, principal, tool, outcome))
}

func (f *fakeClaims) CountPrincipal(_ context.Context, ns, principal string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for k, c := range f.claims {
		if c.Namespace == ns && f.principals[k] == principal {
			n++
		}
	}
	return n, nil
}

func (f *fakeClaims) Delete(ctx context.Context, ns, name, owner string) error {
	if _, err := f.Get(ctx, ns, name, owner); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.claims, ns+"/"+name)
	return nil
}

func (f *fakeClaims) Extend(ctx context.Context, ns, name, owner string, after time.Duration) (kube.Claim, error) {
	c, err := f.Get(ctx, ns, name, owner)
	if err != nil {
		return kube.Claim{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c.ShutdownAt, c.ShutdownAfter = time.Now().Add(after).Truncate(time.Second), after
	f.claims[ns+"/"+name] = c
	return c, nil
}

func (f *fakeClaims) Status(ctx context.Context, ns, name, owner string) (kube.Status, error) {
	if _, err := f.Get(ctx, ns, name, owner); err != nil {
		return kube.Status{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return kube.Status{Status: "SandboxNotReady", Message: "Pod is terminating"}, nil
	}
	return kube.Status{Status: "SandboxReady", Ready: true, Message: "Pod is Ready"}, nil
}

func (f *fakeClaims) PodState(context.Context, string, string, string) kube.PodState {
	return kube.PodState{}
}

func (f *fakeClaims) setSuspended(ns, name string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.claims[ns+"/"+name]
	c.Suspended, c.Ready = on, !on
	c.PodIPs = nil
	if !on {
		c.PodIPs = []string{"127.0.0.10"} // a resumed sandbox has a new pod
	}
	f.claims[ns+"/"+name] = c
}

func (f *fakeClaims) Suspend(ctx context.Context, ns, name, owner string) (kube.Status, error) {
	if _, err := f.Get(ctx, ns, name, owner); err != nil {
		return kube.Status{}, err
	}
	f.setSuspended(ns, name, true)
	return kube.Status{Status: kube.StatusSuspended, Message: "PodTerminated: Pod has been terminated. Sandbox is suspended"}, nil
}

func (f *fakeClaims) Resume(ctx context.Context, ns, name, owner string, _ time.Duration, progress func(string)) (kube.Claim, error) {
	if _, err := f.Get(ctx, ns, name, owner); err != nil {
		return kube.Claim{}, err
	}
	f.mu.Lock()
	f.resumes++
	err := f.resumeErr
	f.mu.Unlock()
	if err != nil {
		return kube.Claim{}, err
	}
	f.setSuspended(ns, name, false)
	if progress != nil {
		progress("ready")
	}
	return f.Get(ctx, ns, name, owner)
}

// fakeConn answers from fixed data and records what it was asked.
type fakeConn struct {
	mu             sync.Mutex // get_sandbox_metrics execs in parallel
	stdout, stderr string
	exitCode       int
	execErr        error
	existsErr      error // returned by Exists when set
	files          map[string][]byte
	listing        conn.Listing
	calls          int
	lastTarget     conn.Target
	lastExec       conn.ExecRequest
}

func (f *fakeConn) Exec(_ context.Context, t conn.Target, req conn.ExecRequest) (conn.ExecResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.lastTarget, f.lastExec = t, req
	_, _ = io.WriteString(req.Stdout, f.stdout)
	_, _ = io.WriteString(req.Stderr, f.stderr)
	return conn.ExecResult{ExitCode: f.exitCode}, f.execErr
}

func (f *fakeConn) Upload(_ context.Context, t conn.Target, path string, r io.Reader) (int64, error) {
	f.calls++
	data, err := io.ReadAll(r)
	if err != nil {
		return int64(len(data)), err
	}
	f.files[path] = data
	return int64(len(data)), nil
}

func (f *fakeConn) Download(_ context.Context, t conn.Target, path string, w io.Writer, max int64) (int64, error) {
	f.calls++
	b, ok := f.files[path]
	if !ok {
		return 0, fmt.Errorf("%q: %w", path, conn.ErrNotFound)
	}
	if int64(len(b)) > max {
		return 0, fmt.Errorf("%q: %w: %d bytes, the limit is %d", path, conn.ErrTooLarge, len(b), max)
	}
	n, err := w.Write(b)
	return int64(n), err
}

func (f *fakeConn) List(_ context.Context, t conn.Target, path string, max int) (conn.Listing, error) {
	f.calls++
	l := f.listing
	if len(l.Entries) > max {
		l.Entries = l.Entries[:max]
	}
	return l, nil
}

func (f *fakeConn) Exists(_ context.Context, t conn.Target, path string) (bool, error) {
	f.calls++
	if f.existsErr != nil {
		return false, f.existsErr
	}
	_, ok := f.files[path]
	return ok, nil
}

func (f *fakeConn) Close() error { return nil }

const testOwner = "owner-a"

// harness is an MCP client talking in-process to a server built on the fakes.
type harness struct {
	claims *fakeClaims
	conn   *fakeConn
	c      *client.Client
}

func newHarness(t *testing.T, opts ...func(*Deps, *fakeClaims)) *harness {
	t.Helper()
	h := &harness{claims: newFakeClaims(), conn: &fakeConn{files: map[string][]byte{}}}
	// Output schemas declared, so that WithOutputSchemaValidation checks every result the tests
	// see against its schema (the golden list turns them off, as the default is).
	d := Deps{Claims: h.claims, Conn: h.conn, DefaultNamespace: "default", Log: zerolog.Nop(),
		Owner: func(context.Context) (string, error) { return testOwner, nil }, OutputSchemas: true}
	for _, o := range opts {
		o(&d, h.claims)
	}
	c, err := client.NewInProcessClient(NewServer(d, "test", serverTestOptions()...))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: "2025-11-25"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	h.c = c
	return h
}

func (h *harness) call(t *testing.T, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := h.c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		t.Fatalf("%s: protocol error %v", tool, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}
