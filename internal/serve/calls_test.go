package serve

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
)

func TestConcurrencyLimitPerPrincipal(t *testing.T) {
	e := newEnv(t, envOpts{settings: HTTPSettings{MaxConcurrentCalls: 2}})
	alice := e.client(t, tokAlice)
	bob := e.client(t, tokBob)
	for _, c := range []*client{alice, bob} {
		if code := c.initialize(); code != http.StatusOK {
			t.Fatalf("initialize: %d", code)
		}
	}
	var wg sync.WaitGroup
	results := make(chan callResult, 2)
	for range 2 {
		wg.Go(func() { results <- alice.call("block", nil) })
	}
	for range 2 {
		select {
		case p := <-e.started:
			if p != "alice" {
				t.Fatalf("block started for %q", p)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("blocking calls did not start")
		}
	}

	got := alice.call("whoami", nil)
	want := "too many concurrent calls for this principal (limit 2, K8S_SANDBOX_HTTP__MAX_CONCURRENT_CALLS; tool calls and requests through /ports and /transfer URLs count alike); wait for one to finish"
	if got.status != http.StatusOK || !got.isError || got.text != want {
		t.Errorf("third call for alice: %+v", got)
	}
	if got := bob.call("whoami", nil); got.isError || got.text != "bob|"+bob.session {
		t.Errorf("bob is limited by alice's calls: %+v", got)
	}

	close(e.release)
	wg.Wait()
	close(results)
	for r := range results {
		if r.isError || r.text != "released" {
			t.Errorf("blocked call: %+v", r)
		}
	}
	if got := alice.call("whoami", nil); got.isError || got.text != "alice|"+alice.session {
		t.Errorf("alice after her calls finished: %+v", got)
	}
}

func TestLimitConcurrencyUnit(t *testing.T) {
	ctx := context.Background()
	if got := CallerKey(auth.WithPrincipal(ctx, auth.Static("alice"))); got != "principal:static:alice" {
		t.Errorf("CallerKey with principal = %q", got)
	}
	if got := CallerKey(auth.WithPrincipal(ctx, auth.OIDC("https://idp.example.com", "alice"))); got != "principal:oidc:https://idp.example.com#alice" {
		t.Errorf("CallerKey with an OIDC principal = %q", got)
	}
	if got := CallerKey(ctx); got != "anonymous" {
		t.Errorf("CallerKey without anything = %q", got)
	}
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	slow := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		entered <- struct{}{}
		<-release
		return mcp.NewToolResultText("done"), nil
	}
	for _, tc := range []struct {
		n, calls, refused int
	}{{n: 1, calls: 3, refused: 2}, {n: 3, calls: 3, refused: 0}, {n: 0, calls: 3, refused: 0}} {
		h := LimitConcurrency(tc.n, func(context.Context) string { return "k" })(slow)
		results := make(chan *mcp.CallToolResult, tc.calls)
		var wg sync.WaitGroup
		for range tc.calls {
			wg.Go(func() { r, _ := h(ctx, mcp.CallToolRequest{}); results <- r })
		}
		for range tc.calls - tc.refused {
			<-entered
		}
		// Refused calls return without entering; wait for them before releasing the rest.
		refused := 0
		for range tc.refused {
			if r := <-results; r.IsError {
				refused++
			}
		}
		close(release)
		wg.Wait()
		release = make(chan struct{})
		if refused != tc.refused {
			t.Errorf("n=%d: %d refused, want %d", tc.n, refused, tc.refused)
		}
	}
}

// Issue 43.5: requests through /ports and /transfer URLs take their check's place from the same
// cap as the principal's tool calls, and another principal's are not bound by them.
func TestCallLimitSharedWithURLs(t *testing.T) {
	l := NewCallLimit(2)
	alice := auth.WithPrincipal(context.Background(), auth.Static("alice"))
	bob := auth.WithPrincipal(context.Background(), auth.Static("bob"))
	var releases []func()
	for range 2 {
		release, err := l.Admit(alice)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	if _, err := l.Admit(alice); err == nil {
		t.Fatal("a third request of alice was admitted")
	}
	call := l.Tools(CallerKey)(func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ran"), nil
	})
	if res, _ := call(alice, mcp.CallToolRequest{}); !res.IsError {
		t.Error("alice's tool call ran past her cap")
	}
	if res, _ := call(bob, mcp.CallToolRequest{}); res.IsError {
		t.Error("bob's tool call was refused for alice's requests")
	}
	releases[0]()
	releases[0]() // a second release gives nothing more back
	if res, _ := call(alice, mcp.CallToolRequest{}); res.IsError {
		t.Error("alice's tool call after a request ended was refused")
	}
	if _, err := l.Admit(alice); err != nil {
		t.Errorf("after one release: %v", err)
	}
	if _, err := l.Admit(alice); err == nil {
		t.Error("a second release gave a place back")
	}
}
