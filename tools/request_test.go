package tools

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// requestClaims is fakeClaims with kube's request id rule: the claim of (owner, request id)
// has one name, and a create that finds it live returns it as Reused.
type requestClaims struct {
	*fakeClaims
	mu sync.Mutex // one create at a time, like the API server's name uniqueness
}

func (r *requestClaims) Create(ctx context.Context, req kube.CreateRequest) (kube.Claim, error) {
	if req.RequestID == "" {
		return r.fakeClaims.Create(ctx, req)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	name := kube.RequestClaimName(req.Owner, req.RequestID)
	if c, err := r.Get(ctx, req.Namespace, name, req.Owner); err == nil {
		if req.Posted != nil {
			req.Posted()
		}
		c.Reused = true
		return c, nil
	}
	if req.Attach {
		return kube.Claim{}, fmt.Errorf("sandbox claim %q: %w", name, kube.ErrNotFound)
	}
	f := r.fakeClaims
	f.mu.Lock()
	f.created = append(f.created, req)
	f.principals[req.Namespace+"/"+name] = req.Principal
	f.mu.Unlock()
	f.add(req.Namespace, name, req.Owner)
	f.mu.Lock()
	c := f.claims[req.Namespace+"/"+name]
	c.RequestID = req.RequestID
	if req.ShutdownAfter != nil {
		c.ShutdownAt = time.Now().Add(*req.ShutdownAfter).Truncate(time.Second)
	}
	f.claims[req.Namespace+"/"+name] = c
	f.mu.Unlock()
	if req.Posted != nil {
		req.Posted()
	}
	return c, nil
}

func withRequests(d *Deps, f *fakeClaims) { d.Claims = &requestClaims{fakeClaims: f} }

// countingObserver counts the sandboxes the tools report as created.
type countingObserver struct {
	noObserver
	mu      sync.Mutex
	created int
}

func (o *countingObserver) SandboxCreated(time.Duration) { o.mu.Lock(); o.created++; o.mu.Unlock() }

// Issue 30.3: a create repeated with its request_id answers the first create's answer, makes
// no second claim and counts no second sandbox.
func TestCreateRepeatedWithRequestID(t *testing.T) {
	obs := &countingObserver{}
	h := newHarness(t, withRequests, func(d *Deps, _ *fakeClaims) { d.Observer = obs })
	args := map[string]any{"warmpool": "p", "request_id": "job-1"}
	first := h.call(t, "create_sandbox", args)
	time.Sleep(1100 * time.Millisecond) // a recomputed shutdown time would move by a second
	again := h.call(t, "create_sandbox", args)
	if first.IsError || again.IsError {
		t.Fatalf("%s / %s", text(first), text(again))
	}
	a, b := first.StructuredContent.(map[string]any), again.StructuredContent.(map[string]any)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("the repeat answered %v, the first %v", b, a)
	}
	if n := len(h.claims.created); n != 1 || obs.created != 1 {
		t.Errorf("%d claims posted, %d sandboxes counted; want 1 and 1", n, obs.created)
	}
	other := h.call(t, "create_sandbox", map[string]any{"warmpool": "p", "request_id": "job-2"})
	if other.IsError || other.StructuredContent.(map[string]any)["sandbox_claim_name"] == a["sandbox_claim_name"] {
		t.Errorf("another request_id: %v %s", other.StructuredContent, text(other))
	}
}

// At the cap, repeats of a live request, racing, all get its sandbox; a new request (or none)
// is still refused.
func TestRequestIDRepeatsPassTheCap(t *testing.T) {
	h := newHarness(t, withRequests, func(d *Deps, f *fakeClaims) {
		d.MaxSandboxesPerOwner = 1
		f.delay = 10 * time.Millisecond
	})
	const racers = 8
	results := make([]*mcp.CallToolResult, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			results[i] = h.call(t, "create_sandbox", map[string]any{"warmpool": "p", "request_id": "job-1"})
		})
	}
	wg.Wait()
	want := kube.RequestClaimName(testOwner, "job-1")
	for i, res := range results {
		if res.IsError || res.StructuredContent.(map[string]any)["sandbox_claim_name"] != want {
			t.Errorf("racer %d: %v %s", i, res.StructuredContent, text(res))
		}
	}
	if n := len(h.claims.created); n != 1 {
		t.Errorf("%d claims posted, want 1", n)
	}
	for _, args := range []map[string]any{{"warmpool": "p", "request_id": "job-2"}, {"warmpool": "p"}} {
		if res := h.call(t, "create_sandbox", args); !res.IsError || text(res) != "you already have 1 live sandboxes, the most this server allows; "+
			"delete one with delete_sandbox (list_sandboxes lists them) and retry" {
			t.Errorf("%v at the cap: %s", args, text(res))
		}
	}
}

// list_sandboxes shows what the API holds of the caller's, in every allowed namespace with "*".
func TestListSandboxes(t *testing.T) {
	h := newHarness(t, func(d *Deps, f *fakeClaims) { d.AllowedNamespaces = []string{"ns1", "ns2"} })
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h.claims.add("ns1", "a", testOwner)
	h.claims.add("ns2", "b", testOwner)
	h.claims.add("ns2", "theirs", "someone-else")
	h.claims.mu.Lock()
	h.claims.claims["ns1/a"] = kube.Claim{Namespace: "ns1", Name: "a", WarmPool: "p", SandboxName: "p-x", Ready: true, Created: created,
		ShutdownAt: created.Add(time.Hour), Labels: map[string]string{"team": "x"}, RequestID: "job-1"}
	h.claims.claims["ns2/b"] = kube.Claim{Namespace: "ns2", Name: "b", WarmPool: "q", Created: created, Suspended: true}
	h.claims.mu.Unlock()
	res := h.call(t, "list_sandboxes", map[string]any{"namespace": "*"})
	if res.IsError {
		t.Fatal(text(res))
	}
	var got ListSandboxesResult
	decode(t, res.StructuredContent, &got)
	rows := got.Sandboxes
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	a, b := rows[0], rows[1]
	if a.SandboxClaimName != "a" || !a.Ready || a.State != stateRunning || a.Pool != "p" || a.Created != "2026-01-02T03:04:05Z" ||
		a.ShutdownTime != "2026-01-02T04:04:05Z" || a.Labels["team"] != "x" || a.RequestID != "job-1" || a.AgeSeconds <= 0 {
		t.Errorf("row a %+v", a)
	}
	if b.SandboxClaimName != "b" || b.Ready || b.State != stateSuspended || b.ShutdownTime != "" || b.Labels != nil {
		t.Errorf("row b %+v", b)
	}
	var one ListSandboxesResult
	decode(t, h.call(t, "list_sandboxes", map[string]any{"namespace": "ns1"}).StructuredContent, &one)
	if len(one.Sandboxes) != 1 {
		t.Errorf("ns1: %+v", one)
	}
	if res := h.call(t, "list_sandboxes", map[string]any{"namespace": "default"}); !res.IsError {
		t.Errorf("a namespace outside the allowlist: %+v", res.StructuredContent)
	}
}
