//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

// Issue 43's races, on the real node: a process in the sandbox swapping a directory for a
// link out while the path tools run, concurrent edits of one file, and concurrent moves
// without overwrite into one destination.

// swapIterations is how often each tool runs against the swap loop: the attack run reached
// outside 2 to 6 times in 40 tries per tool before the scripts entered their directories.
const swapIterations = 25

// TestPathToolsNeverFollowASwappedDirectory: while a loop in the sandbox keeps swapping
// directory d for a link to a directory in /tmp (holding CANARY files) and back (swapLoop), remove_path,
// move_path, search_files, read_file, download_archive, upload_archive and copy_from_sandbox
// work on d again and again. None of them may read, remove, move or write anything in /tmp:
// each call either works on the real d or fails.
func TestPathToolsNeverFollowASwappedDirectory(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t, bothPools...)
	for _, c := range runtimes() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			host := t.TempDir()
			s := stdioSession(t, append([]string{"K8S_SANDBOX_HOST_PATHS=" + host}, c.env...), "")
			created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
			with := sandboxArgs(created.SandboxClaimName, ns.Name)
			out := outsideName("swap")
			sh := func(cmd string) string {
				t.Helper()
				r := call[execResult](t, s, "execute_command", with(map[string]any{"command": cmd}))
				if r.ExitCode != 0 {
					t.Fatalf("%s: %+v", cmd, r)
				}
				return r.Stdout
			}
			const snapshot = "cd %s && find . | LC_ALL=C sort; cat canary sub/canary 2>&1; stat -c %%i canary 2>&1; true"
			before := sh("mkdir -p d " + out + "/sub && printf 'inside\\n' > d/f && printf 'CANARY\\n' | tee " + out + "/canary > " +
				out + "/sub/canary && " + fmt.Sprintf(snapshot, out))
			archive := base64.StdEncoding.EncodeToString(tarGz(t, map[string]string{"unpacked.txt": "u\n"}))
			sh("ln -s " + out + " d.link && nohup python3 -c '" + swapLoop + "' >/dev/null 2>&1 & echo started")

			leaked, refused := map[string]int{}, map[string]int{}
			leak := func(tool, what string) {
				if strings.Contains(what, "CANARY") {
					leaked[tool]++
				}
			}
			callRaw := func(t *testing.T, s *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
				t.Helper()
				r := callRaw(t, s, tool, args)
				if r.IsError {
					refused[tool]++
				}
				return r
			}
			for i := range swapIterations {
				callRaw(t, s, "remove_path", with(map[string]any{"path": "d/canary"}))
				callRaw(t, s, "move_path", with(map[string]any{"path": "d/canary", "destination": fmt.Sprintf("stolen-%d", i)}))
				callRaw(t, s, "move_path", with(map[string]any{"path": "d/sub", "destination": fmt.Sprintf("stolen-dir-%d", i), "overwrite": true}))
				if r := callRaw(t, s, "search_files", with(map[string]any{"path": "d", "pattern": "CANARY"})); !r.IsError {
					leak("search_files", fmt.Sprint(r.StructuredContent))
				}
				if r := callRaw(t, s, "read_file", with(map[string]any{"path": "d/canary"})); !r.IsError {
					leak("read_file", resultText(r))
				}
				if r := callRaw(t, s, "download_archive", with(map[string]any{"path": "d"})); !r.IsError {
					leak("download_archive", archiveText(t, decode[struct {
						Content string `json:"content"`
					}](t, r).Content))
				}
				callRaw(t, s, "upload_archive", with(map[string]any{"path": "d", "content": archive}))
				dst := filepath.Join(host, fmt.Sprintf("copy-%d", i))
				if r := callRaw(t, s, "copy_from_sandbox", with(map[string]any{"path": "d", "host_path": dst})); !r.IsError {
					leak("copy_from_sandbox", treeText(t, dst))
				}
			}
			sh("touch stop; for i in $(seq 1 100); do [ -e stopped ] && break; sleep 0.1; done; test -e stopped")
			t.Logf("calls refused or failed while d was swapped, per tool (of %d each): %v", swapIterations, refused)
			for tool, n := range leaked {
				t.Errorf("%s read a CANARY file outside the working directory %d times in %d", tool, n, swapIterations)
			}
			if after := sh(fmt.Sprintf(snapshot, out)); after != before {
				t.Errorf("the directory outside after the calls:\n%s\nwas:\n%s", after, before)
			}
			if got := sh("cat stolen-*/canary stolen-* 2>/dev/null | grep -c CANARY || true"); got != "0\n" {
				t.Errorf("%s CANARY files were moved into the working directory", strings.TrimSpace(got))
			}
			sh("rm -rf " + out)
			call[struct{}](t, s, "delete_sandbox", with(nil))
		})
	}
}

// swapLoop exchanges directory d and link d.link (to the directory outside) atomically
// (renameat2 with RENAME_EXCHANGE), about every half millisecond until the file stop
// appears, then leaves d the directory and writes stopped. d always exists, and is the link
// half the time, so a tool that checks a path and uses it a few milliseconds later finds it
// changed in between about one time in four.
const swapLoop = `import ctypes, os, platform, time
nr = {"x86_64": 316, "aarch64": 276}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
def swap():
    libc.syscall(ctypes.c_long(nr), ctypes.c_long(-100), b"d", ctypes.c_long(-100), b"d.link", ctypes.c_long(2))
while not os.path.exists("stop"):
    swap(); time.sleep(0.0005)
if os.path.islink("d"): swap()
open("stopped", "w").close()
`

// tarGz is a gzip-compressed tar of files.
func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// archiveText is every name and file of a base64 tar.gz, concatenated.
func archiveText(t *testing.T, content string) string {
	t.Helper()
	data, err := base64.StdEncoding.DecodeString(content)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return b.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(h.Name + "\n")
		if _, err := io.Copy(&b, tr); err != nil {
			t.Fatal(err)
		}
	}
}

// treeText is every file under dir on the host, concatenated.
func treeText(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			b.Write(data)
		}
		return nil
	})
	return b.String()
}

// TestConcurrentEditsAndMovesLoseNothing: ten edit_file calls at once on one file, each
// changing its own line, either succeed with their change in the file or fail saying the
// file changed; ten pairs of move_path without overwrite into one destination each have
// exactly one winner, and every file is still there.
func TestConcurrentEditsAndMovesLoseNothing(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t, bothPools...)
	for _, c := range runtimes() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := stdioSession(t, c.env, "")
			created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
			with := sandboxArgs(created.SandboxClaimName, ns.Name)
			const n = 10
			if r := call[execResult](t, s, "execute_command", with(map[string]any{"command": fmt.Sprintf(
				`for i in $(seq 0 %d); do echo "line $i" >> f.txt; echo "a$i" > "a$i"; echo "b$i" > "b$i"; done`, n-1)})); r.ExitCode != 0 {
				t.Fatalf("setup: %+v", r)
			}

			type outcome struct {
				ok  bool
				msg string
			}
			edits := make([]outcome, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := callRaw(t, s, "edit_file", with(map[string]any{"path": "f.txt", "old_text": fmt.Sprintf("line %d\n", i), "new_text": fmt.Sprintf("edit %d\n", i)}))
					edits[i] = outcome{!r.IsError, resultText(r)}
				}()
			}
			wg.Wait()
			final := call[execResult](t, s, "execute_command", with(map[string]any{"command": "cat f.txt"})).Stdout
			done := 0
			for i, o := range edits {
				has := strings.Contains(final, fmt.Sprintf("edit %d\n", i))
				switch {
				case o.ok && !has:
					t.Errorf("edit %d answered ok but is not in the file:\n%s", i, final)
				case !o.ok && !strings.Contains(o.msg, "changed while it was being edited"):
					t.Errorf("edit %d failed without saying the file changed: %s", i, o.msg)
				case !o.ok && has:
					t.Errorf("edit %d failed (%s) but is in the file", i, o.msg)
				case o.ok:
					done++
				}
			}
			t.Logf("%d of %d concurrent edits applied, the rest asked to retry", done, n)

			for i := range n {
				moves := make([]outcome, 2)
				for j, src := range []string{"a", "b"} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := callRaw(t, s, "move_path", with(map[string]any{"path": fmt.Sprintf("%s%d", src, i), "destination": fmt.Sprintf("dst%d", i)}))
						moves[j] = outcome{!r.IsError, resultText(r)}
					}()
				}
				wg.Wait()
				if moves[0].ok == moves[1].ok {
					t.Errorf("pair %d: %+v, want exactly one move to succeed", i, moves)
				}
				for _, m := range moves {
					if !m.ok && !strings.Contains(m.msg, "destination exists") {
						t.Errorf("pair %d: the losing move says %q, want that the destination exists", i, m.msg)
					}
				}
			}
			if got := call[execResult](t, s, "execute_command", with(map[string]any{"command": "cat a* b* dst* 2>/dev/null | wc -l"})).Stdout; got != fmt.Sprintf("%d\n", 2*n) {
				t.Errorf("files after the moves: %s, want all %d", got, 2*n)
			}
			call[struct{}](t, s, "delete_sandbox", with(nil))
		})
	}
}

// TestCopyFromSandboxNeverGrantsGroupWrite: world-writable files and directories in the
// sandbox arrive on the host writable by their owner alone, a file and a tree alike.
func TestCopyFromSandboxNeverGrantsGroupWrite(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t, localstack.SandboxdPool)
	c := connections()[4] // sandboxd: the copy tools' host side is the same for every runtime
	host := t.TempDir()
	s := stdioSession(t, append([]string{"K8S_SANDBOX_HOST_PATHS=" + host}, c.env...), "")
	created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
	with := sandboxArgs(created.SandboxClaimName, ns.Name)
	if r := call[execResult](t, s, "execute_command", with(map[string]any{"command": "mkdir -p w/open && echo x > w/open/f && echo y > w/one && chmod 777 w w/open && chmod 666 w/open/f w/one"})); r.ExitCode != 0 {
		t.Fatalf("setup: %+v", r)
	}
	call[struct{}](t, s, "copy_from_sandbox", with(map[string]any{"path": "w", "host_path": filepath.Join(host, "tree")}))
	call[struct{}](t, s, "copy_from_sandbox", with(map[string]any{"path": "w/one", "host_path": filepath.Join(host, "one")}))
	for _, p := range []string{"tree", "tree/open", "tree/open/f", "tree/one", "one"} {
		fi, err := os.Stat(filepath.Join(host, p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o022 != 0 {
			t.Errorf("%s on the host: %v, want no group or other write", p, fi.Mode().Perm())
		}
	}
	call[struct{}](t, s, "delete_sandbox", with(nil))
}

// TestListFilesShowsADanglingLink: on the python runtime, whose /list fails with HTTP 500 for
// a directory holding a link that leads nowhere, list_files works and shows the link.
func TestListFilesShowsADanglingLink(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t, localstack.PythonPool)
	c := connections()[0] // python runtime via gateway
	s := stdioSession(t, c.env, "")
	created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
	with := sandboxArgs(created.SandboxClaimName, ns.Name)
	if r := call[execResult](t, s, "execute_command", with(map[string]any{"command": "mkdir d && echo x > d/f && ln -s nowhere d/dangling"})); r.ExitCode != 0 {
		t.Fatalf("setup: %+v", r)
	}
	type entry struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	got := call[struct {
		Entries []entry `json:"entries"`
	}](t, s, "list_files", with(map[string]any{"path": "d"}))
	types := map[string]string{}
	for _, e := range got.Entries {
		types[e.Name] = e.Type
	}
	if len(types) != 2 || types["f"] != "file" || types["dangling"] != "symlink" {
		t.Errorf("list_files of a directory with a dangling link: %+v, want f (file) and dangling (symlink)", got.Entries)
	}
	call[struct{}](t, s, "delete_sandbox", with(nil))
}
