//go:build e2e

package e2e

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type (
	createResult struct {
		SandboxClaimName string `json:"sandbox_claim_name"`
		Namespace        string `json:"namespace"`
		SandboxName      string `json:"sandbox_name"`
		CustomPool       string `json:"custom_pool"`
		VolumePath       string `json:"volume_path"`
	}
	execResult struct {
		ExitCode         int    `json:"exit_code"`
		Stdout           string `json:"stdout"`
		Stderr           string `json:"stderr"`
		StdoutTotalChars int    `json:"stdout_total_chars"`
		StdoutTruncated  bool   `json:"stdout_truncated"`
		StderrTruncated  bool   `json:"stderr_truncated"`
		Note             string `json:"note"`
	}
	listResult struct {
		Entries []struct {
			Name    string  `json:"name"`
			Size    int64   `json:"size"`
			Type    string  `json:"type"`
			ModTime float64 `json:"mod_time"`
		} `json:"entries"`
		TotalEntries int  `json:"total_entries"`
		Truncated    bool `json:"truncated"`
	}
	statusResult struct {
		Status  string `json:"status"`
		Ready   bool   `json:"ready"`
		Message string `json:"message"`
	}
)

// TestEveryToolEveryConnection runs create → execute → upload → download → list → exists →
// status → delete through each connection type, over stdio and over HTTP, in both eras.
func TestEveryToolEveryConnection(t *testing.T) {
	for _, c := range connections() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ns := stack.Namespace(t, c.pool)
			t.Run("stdio", func(t *testing.T) {
				scenario(t, stdioSession(t, c.env, ""), ns.Name, c.pool)
			})
			t.Run("http", func(t *testing.T) {
				base := httpServer(t, c.env)
				scenario(t, httpSession(t, base, "2025-11-25"), ns.Name, c.pool)
			})
		})
	}
}

func scenario(t *testing.T, s *mcp.ClientSession, ns, pool string) {
	t.Helper()
	scenarioWith(t, s, ns, pool, 0)
}

// scenarioWith is scenario where, with several replicas, the status call after delete_sandbox
// may reach a replica whose watch has not delivered the deletion yet: it is given settle to
// say "not found". One server says so at once (settle 0).
func scenarioWith(t *testing.T, s *mcp.ClientSession, ns, pool string, settle time.Duration) {
	t.Helper()
	cat := call[struct {
		Namespaces []struct {
			Namespace string `json:"namespace"`
			Pools     []struct {
				Name     string   `json:"name"`
				Images   []string `json:"images"`
				Replicas int      `json:"replicas"`
				Volumes  string   `json:"volumes"`
			} `json:"pools"`
		} `json:"namespaces"`
	}](t, s, "list_sandbox_templates", map[string]any{"namespace": ns})
	found := false
	for _, n := range cat.Namespaces {
		for _, p := range n.Pools {
			// Both example templates allow volume_size.
			found = found || (n.Namespace == ns && p.Name == pool && len(p.Images) > 0 && p.Replicas > 0 && p.Volumes == "Allowed")
		}
	}
	if len(cat.Namespaces) != 1 || !found {
		t.Errorf("list_sandbox_templates does not show %s with its images: %+v", pool, cat)
	}
	if msg := callError(t, s, "create_sandbox", map[string]any{"warmpool": "no-such-pool", "namespace": ns, "sandbox_ready_timeout": 60}); !strings.Contains(msg, pool) {
		t.Errorf("warm pool not found does not name the pools: %s", msg)
	}
	created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": pool, "namespace": ns, "shutdown_after_seconds": 900})
	claim := map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns}
	if created.SandboxName == "" || created.SandboxName == created.SandboxClaimName {
		t.Errorf("warm-pool sandbox name %q should differ from the claim name %q", created.SandboxName, created.SandboxClaimName)
	}
	if m := call[metricsResult](t, s, "get_sandbox_metrics", claim); len(m.Sandboxes) != 1 || !m.Sandboxes[0].complete() {
		t.Errorf("get_sandbox_metrics of a ready sandbox lacks figures: %+v", m)
	}
	with := func(extra map[string]any) map[string]any {
		m := map[string]any{}
		for k, v := range claim {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}

	ex := call[execResult](t, s, "execute_command", with(map[string]any{
		"command": "echo hello && echo world | tr a-z A-Z > out.txt; cat out.txt; echo 'it''s' \"$((6*7))\" >&2; exit 3"}))
	if ex.ExitCode != 3 || ex.Stdout != "hello\nWORLD\n" || ex.Stderr != "its 42\n" || ex.StdoutTruncated {
		t.Errorf("shell semantics: %+v", ex)
	}
	argv := call[execResult](t, s, "execute_command", with(map[string]any{"command": "printf", "args": []any{"%s|", "a b", "$HOME", "&&"}}))
	if argv.Stdout != "a b|$HOME|&&|" || argv.ExitCode != 0 {
		t.Errorf("argv exec: %+v", argv)
	}
	prog := call[execResult](t, s, "run_code", with(map[string]any{"language": "python",
		"code": "import sys\nprint(sum(range(10)), 'it\\'s')\nprint(\"err\", file=sys.stderr)\nsys.exit(5)"}))
	if prog.ExitCode != 5 || prog.Stdout != "45 it's\n" || prog.Stderr != "err\n" {
		t.Errorf("run_code: %+v", prog)
	}
	saved := call[struct {
		StdoutTruncated bool   `json:"stdout_truncated"`
		StdoutFile      string `json:"stdout_file"`
	}](t, s, "execute_command", with(map[string]any{"command": "seq 1 100000", "max_output_chars": 1000, "save_full_output": true}))
	if !saved.StdoutTruncated || saved.StdoutFile == "" {
		t.Errorf("save_full_output: %+v", saved)
	} else if r := call[readFileResult](t, s, "read_file", with(map[string]any{"path": saved.StdoutFile, "offset": 50000, "limit": 1})); r.Content != "50000\t50000\n" || r.TotalLines != 100000 {
		t.Errorf("the saved output read back: %+v", r)
	}
	big := call[execResult](t, s, "execute_command", with(map[string]any{"command": "seq 1 100000", "max_output_chars": 1000}))
	if !big.StdoutTruncated || big.StdoutTotalChars != 588895 || !strings.HasPrefix(big.Stdout, "1\n2\n") ||
		!strings.HasSuffix(big.Stdout, "99999\n100000\n") || !strings.Contains(big.Stdout, "characters omitted") {
		t.Errorf("budgeted output: total %d truncated %v", big.StdoutTotalChars, big.StdoutTruncated)
	}

	// cwd, env, and stdin closed: cat ends at once instead of waiting for the timeout.
	if r := call[execResult](t, s, "execute_command", with(map[string]any{"command": `cat; echo "$PWD $GREETING"`, "cwd": "/tmp",
		"env": map[string]any{"GREETING": "hi there"}, "timeout": 30})); r.ExitCode != 0 || r.Stdout != "/tmp hi there\n" {
		t.Errorf("cwd, env and stdin: %+v", r)
	}

	// A background process through this connection: started, fed, read, ended.
	proc := call[processInfo](t, s, "start_process", with(map[string]any{"command": `read x; echo "got $x"; echo warn >&2`}))
	call[struct{}](t, s, "write_process_stdin", with(map[string]any{"process_id": proc.ProcessID, "text": "it\n"}))
	if out, errOut, o := readUntil(t, s, with, proc.ProcessID, func(_, _ string, o processOutput) bool { return !o.Running }); out != "got it\n" ||
		errOut != "warn\n" || o.ExitCode == nil || *o.ExitCode != 0 {
		t.Errorf("process: stdout %q stderr %q exit %v", out, errOut, o.ExitCode)
	}

	text := "line one\nünïcödé ✓\n"
	up := call[struct {
		BytesWritten int `json:"bytes_written"`
	}](t, s, "upload_file", with(map[string]any{"path": "dir/sub/note.txt", "content": text}))
	if up.BytesWritten != len(text) {
		t.Errorf("bytes_written %d, want %d", up.BytesWritten, len(text))
	}
	type download struct {
		Content   string `json:"content"`
		BytesRead int    `json:"bytes_read"`
	}
	if d := call[download](t, s, "download_file", with(map[string]any{"path": "dir/sub/note.txt"})); d.Content != text || d.BytesRead != len(text) {
		t.Errorf("text download %+v", d)
	}
	bin := []byte{0, 1, 2, 0xff, 0xfe, 'z'}
	call[struct{}](t, s, "upload_file", with(map[string]any{"path": "dir/blob.bin", "content": base64.StdEncoding.EncodeToString(bin), "binary": true}))
	if msg := callError(t, s, "download_file", with(map[string]any{"path": "dir/blob.bin"})); !strings.Contains(msg, "binary=true") {
		t.Errorf("non-UTF-8 download without binary: %s", msg)
	}
	if d := call[download](t, s, "download_file", with(map[string]any{"path": "dir/blob.bin", "binary": true})); d.Content != base64.StdEncoding.EncodeToString(bin) || d.BytesRead != len(bin) {
		t.Errorf("binary download %+v", d)
	}
	if msg := callError(t, s, "download_file", with(map[string]any{"path": "dir/missing.txt"})); !strings.Contains(strings.ToLower(msg), "not found") {
		t.Errorf("missing file: %s", msg)
	}

	l := call[listResult](t, s, "list_files", with(map[string]any{"path": "dir"}))
	if l.TotalEntries != 2 || l.Truncated || len(l.Entries) != 2 {
		t.Fatalf("list dir: %+v", l)
	}
	kinds := map[string]string{}
	for _, e := range l.Entries {
		kinds[e.Name] = e.Type
		if e.ModTime < 1.7e9 {
			t.Errorf("mod_time %v of %s is not a recent POSIX time", e.ModTime, e.Name)
		}
		if e.Name == "blob.bin" && e.Size != int64(len(bin)) {
			t.Errorf("size of blob.bin %d", e.Size)
		}
	}
	if kinds["sub"] != "directory" || kinds["blob.bin"] != "file" {
		t.Errorf("entry types %v", kinds)
	}
	if l := call[listResult](t, s, "list_files", with(map[string]any{"path": "dir", "max_entries": 1})); len(l.Entries) != 1 || !l.Truncated || l.TotalEntries != 2 {
		t.Errorf("capped list %+v", l)
	}

	type exists struct {
		Exists bool `json:"exists"`
	}
	for path, want := range map[string]bool{"dir/sub/note.txt": true, "dir/sub": true, "dir/nope": false} {
		if e := call[exists](t, s, "file_exists", with(map[string]any{"path": path})); e.Exists != want {
			t.Errorf("file_exists(%s) = %v, want %v", path, e.Exists, want)
		}
	}
	// Still alive after all of the above: a readiness probe that timed out on a busy node
	// may flip Ready for a few seconds, so Ready must come back rather than hold at one read.
	if st := stillReady(t, s, claim); st.Status != "SandboxReady" || !st.Ready {
		t.Errorf("status %+v", st)
	}
	call[struct{}](t, s, "delete_sandbox", claim)
	deleted := time.Now()
	for {
		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_sandbox_status", Arguments: claim})
		if err == nil && res.IsError && strings.Contains(resultText(res), "not found") {
			return
		}
		if time.Since(deleted) >= settle {
			t.Errorf("status %s after delete: %v %+v", time.Since(deleted).Round(time.Millisecond), err, res)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stillReady polls get_sandbox_status for up to a minute until the sandbox is Ready and
// returns the last status.
func stillReady(t *testing.T, s *mcp.ClientSession, claim map[string]any) statusResult {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st := call[statusResult](t, s, "get_sandbox_status", claim)
		if (st.Status == "SandboxReady" && st.Ready) || time.Now().After(deadline) {
			return st
		}
		time.Sleep(time.Second)
	}
}
