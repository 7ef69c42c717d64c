//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// metric reads the sum of a metric's samples (every label set) from the server's /metrics.
func metric(t *testing.T, metricsAddr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	defer resp.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		sum, found = sum+v, true
	}
	if !found {
		t.Fatalf("/metrics has no %s", name)
	}
	return sum
}

// rawGet opens the standalone GET stream of session id with token, and returns the response
// with its body open (an admitted stream stays open until it is closed).
func rawGet(t *testing.T, client *http.Client, base, token, id string) (*http.Response, error) {
	req, _ := http.NewRequest(http.MethodGet, base+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	return client.Do(req)
}

// TestStreamFlood is issue 43 point 5: one session opened 19,993 GET streams (43 to 875 MB
// resident, out of file descriptors, other tenants' initialize and /metrics timed out). Now a
// session has one standalone stream (409 beyond) and a principal at most
// K8S_SANDBOX_HTTP__MAX_STREAMS_PER_PRINCIPAL (429 beyond), while another principal still
// initializes and calls; a flood of 2,000 GETs leaves the server's streams, goroutines and
// resident memory where they were.
func TestStreamFlood(t *testing.T) {
	t.Parallel()
	const alice, bob = "streams-alice-0123456789", "streams-bob-0123456789"
	const perPrincipal = 4
	srv := serve(t, 20*time.Second, true, append([]string{"K8S_SANDBOX_AUTH__TOKENS=alice:" + alice + ",bob:" + bob,
		fmt.Sprintf("K8S_SANDBOX_HTTP__MAX_STREAMS_PER_PRINCIPAL=%d", perPrincipal)}, connections()[4].env...),
		"--http", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0")
	streams := func() int { return int(metric(t, srv.metrics, "k8s_sandbox_mcp_streams")) }

	// Real MCP clients: each go-sdk session opens its standalone stream after initialize.
	var sessions []*mcp.ClientSession
	for range perPrincipal {
		cs, err := authSession(t, srv.base, alice, "2025-11-25")
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, cs)
	}
	waitFor(t, 30*time.Second, func() bool { return streams() == perPrincipal })

	client := &http.Client{Timeout: time.Minute}
	resp, err := rawGet(t, client, srv.base, alice, sessions[0].ID())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), "already has its standalone GET stream") {
		t.Fatalf("a second stream of a session: %d %s", resp.StatusCode, body)
	}

	// Alice at her cap: a fifth session opens (POSTs work) but its stream is refused.
	fifth := newMCPSession(srv.base)
	fifth.client.Transport = bearer{alice}
	fifth.open(t)
	resp, err = rawGet(t, client, srv.base, alice, fifth.id)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "K8S_SANDBOX_HTTP__MAX_STREAMS_PER_PRINCIPAL") ||
		resp.Header.Get("Retry-After") == "" {
		t.Fatalf("alice past her stream cap: %d %s", resp.StatusCode, body)
	}
	// Bob is not bound by alice's streams: he initializes, gets his stream, and calls.
	bobSession, err := authSession(t, srv.base, bob, "2025-11-25")
	if err != nil {
		t.Fatalf("bob's initialize while alice is at her cap: %v", err)
	}
	waitFor(t, 30*time.Second, func() bool { return streams() == perPrincipal+1 })
	if res := callRaw(t, bobSession, "list_sandbox_templates", map[string]any{"namespace": "default"}); res.IsError {
		t.Errorf("bob's call while alice is at her cap: %s", resultText(res))
	}

	// The flood: 2,000 GETs of one session, 50 at a time; an admitted one is held open, as an
	// attacker would.
	rssBefore, goroutinesBefore := rssKB(t, srv.cmd.Process.Pid), metric(t, srv.metrics, "go_goroutines")
	const attempts, workers = 2000, 50
	statuses := map[int]int{}
	var held []io.Closer
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			for i := w; i < attempts; i += workers {
				resp, err := rawGet(t, c, srv.base, alice, sessions[1].ID())
				mu.Lock()
				if err != nil {
					statuses[0]++
				} else {
					statuses[resp.StatusCode]++
					if resp.StatusCode == http.StatusOK {
						held = append(held, resp.Body)
					} else {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	defer func() {
		for _, b := range held {
			b.Close()
		}
	}()
	rssAfter, goroutinesAfter, peak := rssKB(t, srv.cmd.Process.Pid), metric(t, srv.metrics, "go_goroutines"), peakRSSKB(t, srv.cmd.Process.Pid)
	t.Logf("%d GETs of one session: statuses %v; server RSS %d -> %d KiB (peak %d KiB), goroutines %.0f -> %.0f, streams %d",
		attempts, statuses, rssBefore, rssAfter, peak, goroutinesBefore, goroutinesAfter, streams())
	if statuses[http.StatusConflict] != attempts {
		t.Errorf("the flood's answers %v, want %d of 409", statuses, attempts)
	}
	if n := streams(); n != perPrincipal+1 {
		t.Errorf("open streams after the flood %d, want %d", n, perPrincipal+1)
	}
	// Each refused GET's connection is one idle keep-alive per worker at most; an admitted
	// stream would hold two or three goroutines.
	if goroutinesAfter > goroutinesBefore+2*workers {
		t.Errorf("goroutines %.0f after the flood, %.0f before: the flood left work behind", goroutinesAfter, goroutinesBefore)
	}
	if peak>>10 >= streamFloodRSSBoundMiB {
		t.Errorf("server peak RSS %d MiB during the flood, want under %d MiB", peak>>10, streamFloodRSSBoundMiB)
	}
	// Another principal's initialize, and /metrics (read above), still answer.
	if _, err := authSession(t, srv.base, bob, "2025-11-25"); err != nil {
		t.Errorf("bob's initialize after the flood: %v", err)
	}
}

// streamFloodRSSBoundMiB is the resident peak the server stays under through TestStreamFlood:
// what it idles at (about 50 MB) and the refused GETs' buffers, which it does not keep.
const streamFloodRSSBoundMiB = 96

// TestTransferSideDoors is issue 43 point 5's side doors: every wrong-token or unknown-claim
// /transfer request cost an API GET outside the call cap (48 concurrent made another tenant's
// calls 10x slower), and a download URL of a FIFO never answered. Now a flood of them costs
// at most one API read per claim a second (the server's own count on /metrics), the caller's
// URLs keep working, and a FIFO's URL answers 422 at once.
func TestTransferSideDoors(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	const alice, bob = "side-alice-0123456789", "side-bob-0123456789"
	c := connections()[4] // sandboxd-pod-ip
	srv := serve(t, 20*time.Second, true, append([]string{"K8S_SANDBOX_AUTH__TOKENS=alice:" + alice + ",bob:" + bob}, c.env...),
		"--http", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0")
	s, err := authSession(t, srv.base, alice, "")
	if err != nil {
		t.Fatal(err)
	}
	created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
	with := sandboxArgs(created.SandboxClaimName, ns.Name)
	type answer struct {
		URL string `json:"url"`
	}
	url := func(path, direction string) string {
		return call[answer](t, s, "create_transfer_url", with(map[string]any{"path": path, "direction": direction})).URL
	}
	do := func(client *http.Client, method, u, token string) (int, string, error) {
		req, _ := http.NewRequest(method, u, strings.NewReader("data"))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}

	// A FIFO: the old server opened it and waited for a writer that never came.
	call[execResult](t, s, "execute_command", with(map[string]any{"command": "mkfifo pipe && echo data > plain"}))
	code, body, err := do(&http.Client{Timeout: 90 * time.Second}, http.MethodGet, url("pipe", "download"), alice)
	if err != nil || code != http.StatusUnprocessableEntity || !strings.Contains(body, "not a regular file") {
		t.Errorf("download URL of a FIFO: %d %q %v, want 422 saying it is not a regular file", code, body, err)
	}

	// The floods: wrong tokens of alice's claim (alice's and bob's), and a claim that is not there.
	good := url("plain", "download")
	prefix := srv.base + "/transfer/" + ns.Name + "/"
	const requests, workers = 1000, 48
	before := metric(t, srv.metrics, "k8s_sandbox_mcp_api_requests_total")
	start := time.Now()
	statuses := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			for i := w; i < requests; i += workers {
				u, token := fmt.Sprintf("%s%s/wrong-%d", prefix, created.SandboxClaimName, i), alice
				switch i % 3 {
				case 1:
					token = bob
				case 2:
					u = fmt.Sprintf("%sno-such-claim-%d/wrong-%d", prefix, i%2, i)
				}
				code, _, err := do(client, http.MethodGet, u, token)
				mu.Lock()
				if err != nil {
					code = 0
				}
				statuses[code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	spent := metric(t, srv.metrics, "k8s_sandbox_mcp_api_requests_total") - before
	t.Logf("%d wrong /transfer requests (%d at once) in %s: statuses %v, %.0f API requests; server RSS %d KiB, goroutines %.0f",
		requests, workers, took.Round(time.Millisecond), statuses, spent, rssKB(t, srv.cmd.Process.Pid), metric(t, srv.metrics, "go_goroutines"))
	// 429: past the caller's call cap, which the checks of these requests now count in.
	if statuses[http.StatusNotFound]+statuses[http.StatusTooManyRequests] != requests || statuses[http.StatusNotFound] == 0 {
		t.Errorf("the flood's answers %v, want %d of 404 (or 429 past the call cap)", statuses, requests)
	}
	// Three claims (alice's and two unknown ones), each read at most once a second, plus what
	// the server reads on its own meanwhile (its watches): never one per request.
	if limit := 3*(took.Seconds()+1) + 10; spent > limit {
		t.Errorf("%d wrong requests cost %.0f API requests, want at most %.0f", requests, spent, limit)
	}
	code, body, err = do(http.DefaultClient, http.MethodGet, good, alice)
	if err != nil || code != http.StatusOK || body != "data\n" {
		t.Errorf("alice's URL after the flood: %d %q %v", code, body, err)
	}
}
