//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
)

// The edges of the file tools' confinement an attack run found, on both runtimes: a
// directory swapped for a link while edit_file runs, the server's state directory
// (.k8s-sandbox-mcp) replaced by a link, and ".." paths answered with a redirect.

// outsideName is a fresh directory name in the sandbox's /tmp, outside its working directory.
func outsideName(what string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "/tmp/k8s-sandbox-mcp-" + what + "-" + hex.EncodeToString(b)
}

// TestEditFileNeverFollowsASwappedDirectory: while a loop in the sandbox keeps swapping a
// directory for a link to a directory in /tmp and back, edit_file edits the file in it again
// and again. Every edit either lands in the working directory or is refused: the file of the
// same name in /tmp keeps its content and inode, and no temporary file appears next to it.
func TestEditFileNeverFollowsASwappedDirectory(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t, bothPools...)
	for _, c := range []connection{connections()[0], connections()[4]} { // python runtime via gateway; sandboxd
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := stdioSession(t, c.env, "")
			created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
			with := sandboxArgs(created.SandboxClaimName, ns.Name)
			out := outsideName("swap")
			sh := func(cmd string) execResult {
				t.Helper()
				r := call[execResult](t, s, "execute_command", with(map[string]any{"command": cmd}))
				if r.ExitCode != 0 {
					t.Fatalf("%s: %+v", cmd, r)
				}
				return r
			}
			before := sh("mkdir d " + out + " && printf 'x\\n' > d/f.txt && printf 'x\\n' > " + out + "/f.txt && stat -c '%i %s' " + out + "/f.txt").Stdout
			// The loop runs until the stop file appears; each turn d is a link out for a moment.
			sh("nohup sh -c 'while [ ! -e stop ]; do mv -T d d.real && ln -s " + out + " d && rm d && mv -T d.real d; done; touch stopped' >/dev/null 2>&1 & echo started")
			var edited, refused int
			for i := range 40 {
				from, to := "x\n", "y\n"
				if i%2 == 1 {
					from, to = to, from
				}
				res := callRaw(t, s, "edit_file", with(map[string]any{"path": "d/f.txt", "old_text": from, "new_text": to}))
				if res.IsError {
					refused++
					continue
				}
				edited++
			}
			sh("touch stop; for i in $(seq 1 100); do [ -e stopped ] && break; sleep 0.1; done; test -e stopped")
			t.Logf("%d edits done, %d refused while the directory was swapped", edited, refused)
			after := sh("stat -c '%i %s' " + out + "/f.txt; cat " + out + "/f.txt; ls -A " + out + "; test -d d && ! test -L d && echo d-is-a-directory").Stdout
			if want := before + "x\nf.txt\nd-is-a-directory\n"; after != want {
				t.Errorf("outside file (inode and size, content), outside directory, then d: %q, want %q: an edit went through the link", after, want)
			}
			sh("rm -rf " + out)
			call[struct{}](t, s, "delete_sandbox", with(nil))
		})
	}
}

// TestStateDirectoryAsALinkIsRefused: with .k8s-sandbox-mcp a link to a directory in /tmp,
// execute_command with save_full_output does not run the command and says why, and the file
// tools refuse every path through the link with the confinement message; the directory in
// /tmp stays empty.
func TestStateDirectoryAsALinkIsRefused(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t, bothPools...)
	for _, c := range []connection{connections()[0], connections()[4]} { // python runtime via gateway; sandboxd
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := stdioSession(t, c.env, "")
			created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
			with := sandboxArgs(created.SandboxClaimName, ns.Name)
			out := outsideName("state")
			if r := call[execResult](t, s, "execute_command", with(map[string]any{"command": "mkdir " + out + " && ln -s " + out + " .k8s-sandbox-mcp && echo ok"})); r.Stdout != "ok\n" {
				t.Fatalf("making the link: %+v", r)
			}

			type savedResult struct {
				ExitCode   int    `json:"exit_code"`
				Stderr     string `json:"stderr"`
				Note       string `json:"note"`
				StdoutFile string `json:"stdout_file"`
			}
			r := call[savedResult](t, s, "execute_command", with(map[string]any{"command": "touch ran", "save_full_output": true}))
			if r.ExitCode != 125 || !strings.Contains(r.Stderr, ".k8s-sandbox-mcp is a symbolic link") || !strings.Contains(r.Note, "did not run") || r.StdoutFile != "" {
				t.Errorf("save_full_output through the link: %+v", r)
			}

			for tool, args := range map[string]map[string]any{
				"upload_file":    {"path": ".k8s-sandbox-mcp/output/x.txt", "content": "x"},
				"make_directory": {"path": ".k8s-sandbox-mcp/output"},
				"edit_file":      {"path": ".k8s-sandbox-mcp/f.txt", "old_text": "a", "new_text": "b"},
				"read_file":      {"path": ".k8s-sandbox-mcp/f.txt"},
				"list_files":     {"path": ".k8s-sandbox-mcp"},
			} {
				if msg := callError(t, s, tool, with(args)); !strings.Contains(msg, "inside the sandbox's working directory") {
					t.Errorf("%s through the link: %s", tool, msg)
				}
			}

			probe := "ls -A " + out + "; test -e ran && echo ran; true"
			if got := call[execResult](t, s, "execute_command", with(map[string]any{"command": probe})).Stdout; got != "" {
				t.Errorf("%s and the refused command's file after the attempts: %q, want nothing", out, got)
			}
			// With the link gone, the server makes its directory again and the output is kept.
			call[execResult](t, s, "execute_command", with(map[string]any{"command": "rm .k8s-sandbox-mcp; rmdir " + out}))
			if r := call[savedResult](t, s, "execute_command", with(map[string]any{"command": "echo kept", "save_full_output": true})); r.ExitCode != 0 || r.StdoutFile == "" {
				t.Errorf("save_full_output without the link: %+v", r)
			} else if got := call[readFileResult](t, s, "read_file", with(map[string]any{"path": r.StdoutFile})); got.Content != "1\tkept\n" {
				t.Errorf("read_file %s: %+v", r.StdoutFile, got)
			}
			call[struct{}](t, s, "delete_sandbox", with(nil))
		})
	}
}

// TestDotDotPathsGetTheConfinementMessage: list_files, download_file and file_exists on ".."
// and paths climbing above the working directory answer the confinement message every file
// tool gives, never a redirect; "." and a path climbing back to it list the working directory.
func TestDotDotPathsGetTheConfinementMessage(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t, bothPools...)
	for _, c := range []connection{connections()[0], connections()[4]} { // python runtime via gateway; sandboxd
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := stdioSession(t, c.env, "")
			created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
			with := sandboxArgs(created.SandboxClaimName, ns.Name)
			call[struct{}](t, s, "upload_file", with(map[string]any{"path": "sub/f.txt", "content": "x"}))
			for _, p := range []string{"..", "../x", "a/../../b", "/.."} {
				for _, tool := range []string{"list_files", "download_file", "file_exists"} {
					msg := callError(t, s, tool, with(map[string]any{"path": p}))
					if !strings.Contains(msg, "leaves the sandbox's working directory") || !strings.Contains(msg, "Paths must stay inside") || strings.Contains(msg, "redirect") {
						t.Errorf("%s %q: %s", tool, p, msg)
					}
				}
			}
			for _, p := range []string{".", "sub/.."} {
				l := call[listResult](t, s, "list_files", with(map[string]any{"path": p}))
				found := false
				for _, e := range l.Entries {
					found = found || e.Name == "sub"
				}
				if !found {
					t.Errorf("list_files %q: %+v, want the working directory", p, l)
				}
			}
			call[struct{}](t, s, "delete_sandbox", with(nil))
		})
	}
}
