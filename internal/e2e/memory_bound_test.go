//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/budget"
)

// peakRSSBoundMiB is the resident peak the server stays under at default settings however
// many large requests one principal sends at once: the README's worst case, what it idles at
// plus the bodies (and results) it admits (K8S_SANDBOX_HTTP__MAX_BODY_BYTES_IN_FLIGHT), each
// decoded into a few copies on the way to the sandbox. Since results share the bound (issue
// 43.2), one principal's default share holds a 32 MiB download, so more bodies fit at once than
// the 16 MiB of before, which held the peak under 256 MiB.
var peakRSSBoundMiB = min(int(budget.WorstCase(defaultInFlight)>>20), deployMemoryLimitMiB)

// TestMemoryBoundUnderLargeRequestFloods is issue 33 point 2: one principal sending 40
// tools/call bodies of 8 MiB at once drove the server from 49 MB to 1.5 GB resident, 16
// upload_archive calls of 7.7 MiB to ~1 GB. Now the bytes in flight are bounded before bodies
// are read, the flood's excess is refused with 429 and Retry-After, and the peak stays under
// peakRSSBoundMiB.
func TestMemoryBoundUnderLargeRequestFloods(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	cmd, base := startServer(t, connections()[4].env)
	s := newMCPSession(base)
	s.open(t)
	claim := s.create(t, ns.Name).SandboxClaimName
	for _, tc := range []struct {
		name string
		n    int
		body []byte
	}{
		{"upload_file bodies at the 8 MiB cap", 40, floodBody(t, "upload_file", map[string]any{
			"sandbox_claim_name": claim, "namespace": ns.Name, "path": "flood.bin", "binary": true,
			"content": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xa5}, 6_200_000))})},
		{"upload_archive bodies of 7.7 MiB", 16, floodBody(t, "upload_archive", map[string]any{
			"sandbox_claim_name": claim, "namespace": ns.Name, "path": "flood",
			"content": base64.StdEncoding.EncodeToString(randomArchive(t, 6_000_000))})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			statuses := map[int]int{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for range tc.n {
				wg.Go(func() {
					one := *s // send records the session ID it is answered with; each sender its own
					code, _ := one.send(t, http.MethodPost, bytes.NewReader(tc.body))
					mu.Lock()
					statuses[code]++
					mu.Unlock()
				})
			}
			wg.Wait()
			peak := peakRSSKB(t, cmd.Process.Pid) >> 10
			t.Logf("%d bodies of %d bytes: statuses %v, server peak RSS %d MiB", tc.n, len(tc.body), statuses, peak)
			if statuses[http.StatusOK] == 0 {
				t.Errorf("no request of the flood was served: %v", statuses)
			}
			for code, n := range statuses {
				if code != http.StatusOK && code != http.StatusTooManyRequests {
					t.Errorf("%d requests answered %d; want 200, or 429 for those over the bound", n, code)
				}
			}
			if peak >= peakRSSBoundMiB {
				t.Errorf("server peak RSS %d MiB, want under %d MiB", peak, peakRSSBoundMiB)
			}
		})
	}
	// The bound refuses the flood's excess, not the principal: the next call is served.
	if c := s.call(t, "list_files", map[string]any{"sandbox_claim_name": claim, "namespace": ns.Name, "path": "."}); c.status != http.StatusOK || c.isError {
		t.Errorf("a call after the floods: %d %s", c.status, c.body)
	}
}

// floodBody is a tools/call of tool as the bytes one request sends.
func floodBody(t *testing.T, tool string, args map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// randomArchive is a gzip-compressed tar of one file of n random bytes, which gzip cannot
// shrink, so the archive's base64 is as large as its content suggests.
func randomArchive(t *testing.T, n int) []byte {
	t.Helper()
	data := make([]byte, n)
	_, _ = rand.Read(data)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: "random.bin", Mode: 0o644, Size: int64(n)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
