package serve

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestMemoryUnderConcurrentLargeBodies replays issue 33's floods from one principal: 40
// tools/call bodies just under the 8 MiB cap at once, then 16 upload_archive-sized ones
// (~7.7 MiB of base64). What the test holds the server to is the in-flight byte bound; the
// peak heap is only logged (compare runs with -v), since it depends on GC timing.
func TestMemoryUnderConcurrentLargeBodies(t *testing.T) {
	if testing.Short() {
		t.Skip("sends ~450 MiB over loopback")
	}
	e := newEnv(t, envOpts{})
	e.srv.AddTool(mcp.NewTool("upload_archive", mcp.WithString("content")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			data, err := base64.StdEncoding.DecodeString(req.GetString("content", ""))
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			// Long enough for the flood's calls to overlap, as uploads to a sandbox do.
			time.Sleep(50 * time.Millisecond)
			return mcp.NewToolResultText(strings.Repeat("x", len(data)%7)), nil
		})
	alice, bob := e.client(t, tokAlice), e.client(t, tokBob)
	for _, c := range []*client{alice, bob} {
		if code := c.initialize(); code != http.StatusOK {
			t.Fatalf("initialize: %d", code)
		}
	}
	set := HTTPSettings{}.withDefaults()
	for _, tc := range []struct {
		name      string
		n         int
		tool, arg string
		bodyBytes int
		senders   []*client
	}{
		{"tools/call at the body cap", 40, "size", "data", int(set.MaxBodyBytes) - 512, []*client{alice}},
		{"upload_archive", 16, "upload_archive", "content", 7_700_000, []*client{alice}},
		// Two principals together reach the total bound, which one alone cannot.
		{"tools/call from two principals", 40, "size", "data", int(set.MaxBodyBytes) - 512, []*client{alice, bob}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := largeCall(t, tc.tool, tc.arg, tc.bodyBytes)
			runtime.GC()
			peak, stop := sampleHeap()
			statuses := map[int]int{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := range tc.n {
				wg.Go(func() {
					code := tc.senders[i%len(tc.senders)].post(body)
					mu.Lock()
					statuses[code]++
					mu.Unlock()
				})
			}
			wg.Wait()
			stop()
			t.Logf("%d bodies of %d bytes: statuses %v, peak heap in use %d MiB", tc.n, len(body), statuses, peak.Load()>>20)
			if statuses[http.StatusOK] == 0 {
				t.Errorf("no call was served: %v", statuses)
			}
			total, principal := e.sessions.bodies.peaks()
			t.Logf("peak bytes in flight: %d in total, %d for one principal", total, principal)
			if total > set.MaxBodyBytesInFlight || principal > set.MaxBodyBytesInFlightPerPrincipal {
				t.Errorf("bytes in flight peaked at %d in total and %d for one principal, over the bounds %d and %d",
					total, principal, set.MaxBodyBytesInFlight, set.MaxBodyBytesInFlightPerPrincipal)
			}
		})
	}
}

// largeCall is a tools/call of tool whose argument arg makes the body size bytes long.
func largeCall(t *testing.T, tool, arg string, size int) []byte {
	t.Helper()
	frame, err := json.Marshal(rpc(2, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{arg: ""}}))
	if err != nil {
		t.Fatal(err)
	}
	// Base64 of the padding's length keeps the argument decodable for upload_archive.
	pad := (size - len(frame)) / 4 * 4
	return bytes.Replace(frame, []byte(`""`), []byte(`"`+strings.Repeat("QUFB", pad/4)+`"`), 1)
}

// post sends body as one request of c's session and returns the status, reading the answer.
func (c *client) post(body []byte) int {
	req, err := http.NewRequest(http.MethodPost, c.e.base+"/mcp", bytes.NewReader(body))
	if err != nil {
		c.t.Error(err)
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set(server.HeaderKeySessionID, c.session)
	req.Header.Set(mcp.HeaderProtocolVersion, "2025-06-18")
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		c.t.Error(err)
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// sampleHeap records the largest HeapInuse seen every few milliseconds until stop returns.
func sampleHeap() (*atomic.Uint64, func()) {
	var peak atomic.Uint64
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return &peak, func() { close(done); <-exited }
}
