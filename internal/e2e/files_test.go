//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 32: files of any size move without passing through the model, through the server in
// bounded memory, byte for byte.
const (
	// bigFile is the size proven through sandboxd; the python runtime (whose upload parser is
	// the runtime's own, in Python) moves bigFile/16, which proves the same code path.
	bigFile = 1 << 30
	// transferRSSBoundMiB is the server's resident peak while it moves bigFile.
	transferRSSBoundMiB = 64
)

// randomData is n bytes of a seeded stream: incompressible, and the same for the same seed.
func randomData(seed uint64, n int64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}), n)
}

func sumOf(t *testing.T, r io.Reader) (string, int64) {
	t.Helper()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil)), n
}

// sandboxSum is the sha256 and size of a file in the sandbox, computed there.
func sandboxSum(t *testing.T, s *mcp.ClientSession, with func(map[string]any) map[string]any, path string) string {
	t.Helper()
	const py = "import hashlib,os,sys\nh=hashlib.sha256()\nf=open(sys.argv[1],'rb')\n" +
		"for b in iter(lambda: f.read(1<<20), b''): h.update(b)\nprint(h.hexdigest(), os.path.getsize(sys.argv[1]))"
	r := call[execResult](t, s, "execute_command", with(map[string]any{"command": "python3", "args": []any{"-c", py, path}, "timeout": 300}))
	if r.ExitCode != 0 {
		t.Fatalf("sha256 of %s in the sandbox: %+v", path, r)
	}
	return strings.TrimSpace(r.Stdout)
}

// TestHostCopyOfAnySize: copy_to_sandbox and copy_from_sandbox move a file of bigFile bytes
// and a directory tree between an allowed host directory and the sandbox, identical, with the
// server's peak RSS under transferRSSBoundMiB; paths outside the allowlist are refused.
func TestHostCopyOfAnySize(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t, bothPools...)
	for _, c := range runtimes() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			size := int64(bigFile)
			if c.name != "sandboxd-pod-ip" {
				size /= 16
			}
			host, outside := t.TempDir(), t.TempDir()
			s, cmd := stdioServer(t, append([]string{"K8S_SANDBOX_HOST_PATHS=" + host}, c.env...), "")
			created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
			with := sandboxArgs(created.SandboxClaimName, ns.Name)

			src := filepath.Join(host, "in", "data.bin")
			if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := os.Create(src)
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.New()
			if _, err := io.Copy(io.MultiWriter(f, h), randomData(1, size)); err != nil {
				t.Fatal(err)
			}
			f.Close()
			want := fmt.Sprintf("%s %d", hex.EncodeToString(h.Sum(nil)), size)

			type copied struct {
				Files int   `json:"files"`
				Bytes int64 `json:"bytes"`
			}
			up := call[copied](t, s, "copy_to_sandbox", with(map[string]any{"host_path": src, "path": "big/data.bin"}))
			if up.Files != 1 || up.Bytes != size {
				t.Errorf("copy_to_sandbox answered %+v, want 1 file of %d bytes", up, size)
			}
			if got := sandboxSum(t, s, with, "big/data.bin"); got != want {
				t.Errorf("in the sandbox: %s, want %s", got, want)
			}
			back := filepath.Join(host, "out", "data.bin")
			down := call[copied](t, s, "copy_from_sandbox", with(map[string]any{"path": "big/data.bin", "host_path": back}))
			rf, err := os.Open(back)
			if err != nil {
				t.Fatal(err)
			}
			sum, n := sumOf(t, rf)
			rf.Close()
			if got := fmt.Sprintf("%s %d", sum, n); got != want || down.Bytes != size {
				t.Errorf("back on the host: %s (answer %+v), want %s", got, down, want)
			}
			if peak := peakRSSKB(t, cmd.Process.Pid) >> 10; peak >= transferRSSBoundMiB {
				t.Errorf("server peak RSS %d MiB after moving %d bytes each way, want under %d MiB", peak, size, transferRSSBoundMiB)
			} else {
				t.Logf("server peak RSS %d MiB after moving %d bytes each way", peak, size)
			}

			// A tree: nested files, an executable, a link inside (kept) and one leading out (skipped).
			tree := filepath.Join(host, "tree")
			for name, body := range map[string]string{"a.txt": "a", "sub/b.txt": "b", "sub/deep/run.sh": "#!/bin/sh\necho ran\n"} {
				p := filepath.Join(tree, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink("a.txt", filepath.Join(tree, "inside")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(tree, "escape")); err != nil {
				t.Fatal(err)
			}
			call[copied](t, s, "copy_to_sandbox", with(map[string]any{"host_path": tree, "path": "proj"}))
			r := call[execResult](t, s, "execute_command", with(map[string]any{"command": "cat proj/inside proj/sub/b.txt; proj/sub/deep/run.sh; ls -a proj | tr '\\n' ' '"}))
			if r.Stdout != "abran\n. .. a.txt inside sub " {
				t.Errorf("the tree in the sandbox: %q", r.Stdout)
			}
			call[copied](t, s, "copy_from_sandbox", with(map[string]any{"path": "proj", "host_path": filepath.Join(host, "tree2")}))
			if b, err := os.ReadFile(filepath.Join(host, "tree2", "sub", "b.txt")); err != nil || string(b) != "b" {
				t.Errorf("the tree back on the host: %q %v", b, err)
			}
			if fi, err := os.Stat(filepath.Join(host, "tree2", "sub", "deep", "run.sh")); err != nil || fi.Mode()&0o100 == 0 {
				t.Errorf("run.sh back on the host: %v %v, want it executable", fi, err)
			}

			for _, tc := range []struct{ tool, hostPath, want string }{
				{"copy_to_sandbox", filepath.Join(outside, "x"), "K8S_SANDBOX_HOST_PATHS"},
				{"copy_from_sandbox", filepath.Join(outside, "x"), "K8S_SANDBOX_HOST_PATHS"},
				{"copy_from_sandbox", filepath.Join(tree, "escape", "x"), "outside"},
				{"copy_to_sandbox", host + "/../" + filepath.Base(outside), "K8S_SANDBOX_HOST_PATHS"},
			} {
				if msg := callError(t, s, tc.tool, with(map[string]any{"host_path": tc.hostPath, "path": "proj/a.txt"})); !strings.Contains(msg, tc.want) {
					t.Errorf("%s %s: %q, want it to say %q", tc.tool, tc.hostPath, msg, tc.want)
				}
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("the directory outside was written: %v", entries)
			}
		})
	}
}

// TestTransferURLs: create_transfer_url's one-time URLs move bigFile bytes up and down through
// the server's HTTP front with its peak RSS under transferRSSBoundMiB; another principal, no
// token, a used or expired URL and a deleted sandbox are refused.
func TestTransferURLs(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	const alice, bob = "transfer-alice-0123456789", "transfer-bob-0123456789"
	c := connections()[4] // sandboxd-pod-ip
	cmd, base := startServer(t, append([]string{"K8S_SANDBOX_AUTH__TOKENS=alice:" + alice + ",bob:" + bob}, c.env...))
	s, err := authSession(t, base, alice, "")
	if err != nil {
		t.Fatal(err)
	}
	created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
	with := sandboxArgs(created.SandboxClaimName, ns.Name)
	type answer struct {
		URL    string `json:"url"`
		Method string `json:"method"`
		Curl   string `json:"curl"`
	}
	url := func(path, direction string, extra map[string]any) answer {
		m := map[string]any{"path": path, "direction": direction}
		for k, v := range extra {
			m[k] = v
		}
		return call[answer](t, s, "create_transfer_url", with(m))
	}
	do := func(method, u, token string, body io.Reader) *http.Response {
		req, err := http.NewRequest(method, u, body)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, u, err)
		}
		return resp
	}
	status := func(method, u, token string) int {
		resp := do(method, u, token, nil)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}

	up := url("big/up.bin", "upload", nil)
	if up.Method != http.MethodPut || !strings.Contains(up.Curl, up.URL) || !strings.Contains(up.Curl, "Authorization") {
		t.Errorf("upload answer %+v", up)
	}
	h := sha256.New()
	resp := do(http.MethodPut, up.URL, alice, io.TeeReader(randomData(2, bigFile), h))
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT of %d bytes: %d", bigFile, resp.StatusCode)
	}
	want := fmt.Sprintf("%s %d", hex.EncodeToString(h.Sum(nil)), bigFile)
	if got := sandboxSum(t, s, with, "big/up.bin"); got != want {
		t.Errorf("uploaded file in the sandbox: %s, want %s", got, want)
	}
	if code := status(http.MethodPut, up.URL, alice); code != http.StatusNotFound {
		t.Errorf("the upload URL used again: %d, want 404", code)
	}

	down := url("big/up.bin", "download", nil)
	if code := status(http.MethodGet, down.URL, ""); code != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401", code)
	}
	if code := status(http.MethodGet, down.URL, bob); code != http.StatusNotFound {
		t.Errorf("another principal: %d, want 404", code)
	}
	resp = do(http.MethodGet, down.URL, alice, nil) // still usable: the refusals did not spend it
	sum, n := sumOf(t, resp.Body)
	resp.Body.Close()
	if got := fmt.Sprintf("%s %d", sum, n); resp.StatusCode != http.StatusOK || got != want {
		t.Errorf("GET: %d %s, want %s", resp.StatusCode, got, want)
	}
	if code := status(http.MethodGet, down.URL, alice); code != http.StatusNotFound {
		t.Errorf("the download URL used again: %d, want 404", code)
	}
	if peak := peakRSSKB(t, cmd.Process.Pid) >> 10; peak >= transferRSSBoundMiB {
		t.Errorf("server peak RSS %d MiB after moving %d bytes each way, want under %d MiB", peak, bigFile, transferRSSBoundMiB)
	} else {
		t.Logf("server peak RSS %d MiB after moving %d bytes each way", peak, bigFile)
	}

	// Expiry is the claim's record against the server's clock: a second past it is enough.
	short := url("big/up.bin", "download", map[string]any{"expires_seconds": 1})
	time.Sleep(2 * time.Second)
	if code := status(http.MethodGet, short.URL, alice); code != http.StatusNotFound {
		t.Errorf("an expired URL: %d, want 404", code)
	}
	last := url("big/up.bin", "download", nil)
	call[struct{}](t, s, "delete_sandbox", with(map[string]any{}))
	if code := status(http.MethodGet, last.URL, alice); code != http.StatusNotFound {
		t.Errorf("a URL of a deleted sandbox: %d, want 404", code)
	}
}
