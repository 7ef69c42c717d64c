package ports

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/readgate"
)

// Issue 43.5: a request through an exposed URL is held to the caller's caps: the call cap while
// its token is checked, given back before it is proxied, and a stream's place while it runs.
func TestLimits(t *testing.T) {
	r, _, _ := setup(t)
	serveHTTP(t, r)
	u, err := r.Expose(context.Background(), "alice", "ns", "c1", 8080)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	held := map[string]int{}
	admit := func(name string) readgate.Admit {
		return func(context.Context) (func(), error) {
			mu.Lock()
			defer mu.Unlock()
			held[name]++
			return func() { mu.Lock(); defer mu.Unlock(); held[name]-- }, nil
		}
	}
	refuse := readgate.Admit(func(context.Context) (func(), error) { return nil, errors.New("too many concurrent calls") })
	for _, l := range []readgate.Limits{{Check: refuse, Stream: admit("stream")}, {Check: admit("check"), Stream: refuse}} {
		r.SetLimits(l)
		if code, body := get(t, u+"x"); code != http.StatusTooManyRequests || !strings.Contains(body, "too many concurrent calls") {
			t.Fatalf("past a cap: %d %q", code, body)
		}
	}
	// While the proxied request streams, it holds a stream's place and no call's.
	r.SetLimits(readgate.Limits{Check: admit("check"), Stream: admit("stream")})
	req, _ := http.NewRequest(http.MethodGet, u+"stream", nil)
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "line 0\n" {
		t.Fatalf("the stream's first line: %q %v", line, err)
	}
	mu.Lock()
	during := map[string]int{"check": held["check"], "stream": held["stream"]}
	mu.Unlock()
	if during["check"] != 0 || during["stream"] != 1 {
		t.Errorf("while the request streams: %v, want the stream's place only", during)
	}
	resp.Body.Close()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return held["stream"] == 0 })
	if held["check"] != 0 {
		t.Errorf("places left: %v", held)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
	}
}
