package workspace

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// localExec runs the scripts on this machine, in dir, with PATH path: the scripts' own
// guarantees, tested without a sandbox.
type localExec struct{ dir, path string }

func (l localExec) Exec(ctx context.Context, _ conn.Target, req conn.ExecRequest) (conn.ExecResult, error) {
	cmd := exec.CommandContext(ctx, req.Argv[0], req.Argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = l.dir, []string{"PATH=" + l.path}, req.Stdout, req.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return conn.ExecResult{ExitCode: ee.ExitCode()}, nil
	}
	return conn.ExecResult{}, err
}

// noPython is a PATH directory with every program of this machine's but python3.
func noPython(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	for _, dir := range []string{"/usr/bin", "/bin"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "python") {
				continue
			}
			_ = os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(bin, e.Name()))
		}
	}
	return bin
}

// TestMoveNoOverwriteEveryWay: a move without overwrite, whichever way the script renames
// (renameat2 with RENAME_NOREPLACE; python claiming the name with a link or an empty
// directory where renameat2 is missing; the shell doing the same without python3), moves a
// file and a directory to a free name and refuses a taken one, leaving both as they were.
func TestMoveNoOverwriteEveryWay(t *testing.T) {
	for _, tool := range []string{"python3", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	if !strings.Contains(moveScript, ".get(platform.machine())") {
		t.Fatal("the renameat2 table lookup moved: update the python link/mkdir case")
	}
	for name, way := range map[string]struct {
		script string
		path   func(t *testing.T) string
	}{
		"renameat2":         {moveScript, func(*testing.T) string { return os.Getenv("PATH") }},
		"python link/mkdir": {strings.Replace(moveScript, ".get(platform.machine())", ".get(None)", 1), func(*testing.T) string { return os.Getenv("PATH") }},
		"shell link/mkdir":  {moveScript, noPython},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			fs := FS{Exec: localExec{dir: dir, path: way.path(t)}}
			sh := func(cmd string) string {
				t.Helper()
				out, err := exec.Command("sh", "-c", cmd).CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v %s", cmd, err, out)
				}
				return string(out)
			}
			sh("cd " + dir + " && echo f > file && mkdir d && echo x > d/x && echo taken > taken && ln -s file link")
			move := func(from, to string) error {
				t.Helper()
				out, err := fs.run(t.Context(), conn.Target{}, way.script, from, to, "0")
				if err != nil {
					return err
				}
				word, detail, _ := status(out)
				if word == "OK" {
					return nil
				}
				return common(word, detail, from)
			}
			for _, from := range []string{"file", "d", "link"} {
				if err := move(from, "taken"); !errors.Is(err, ErrExists) {
					t.Errorf("%s onto a taken name: %v, want ErrExists", from, err)
				}
				if err := move(from, "new/"+from+"2"); err != nil {
					t.Errorf("%s to a free name: %v", from, err)
				}
			}
			if got := sh("cd " + dir + " && ls -A | LC_ALL=C sort | tr '\\n' ' '; ls -A new | LC_ALL=C sort | tr '\\n' ' '; cat taken new/file2 new/d2/x; readlink new/link2"); got !=
				"new taken d2 file2 link2 taken\nf\nx\nfile\n" {
				t.Errorf("after the moves: %q", got)
			}
		})
	}
}

// TestEditRefusesAChangedFile: an edit whose file another writer changed between its read
// and its rename (here the file is rewritten in place by a python3 that runs the edit with a
// hook after the read) writes nothing and answers ErrChanged.
func TestEditRefusesAChangedFile(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// After the read, before the temporary file: another writer appends to the file.
	const hook = "if b\"\\0\" in data[:8192]: answer(error=\"binary\")"
	if !strings.Contains(editScript, hook) {
		t.Fatal("the edit script's read check moved: update the hook")
	}
	script := strings.Replace(editScript, hook, hook+"\nopen(name, \"ab\").write(b\"other\\n\")", 1)
	fs := FS{Exec: localExec{dir: dir, path: os.Getenv("PATH")}}
	out, err := fs.run(t.Context(), conn.Target{}, script, "f.txt", "one", "ONE", "0", "0")
	if err != nil {
		t.Fatal(err)
	}
	word, detail, rest := status(out)
	if word != "JSON" || !strings.Contains(rest, `"changed"`) {
		t.Fatalf("edit of a file changed meanwhile: %s %s %s, want the error changed", word, detail, rest)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f.txt")); !bytes.Equal(b, []byte("one\nother\n")) {
		t.Errorf("the file after the refused edit: %q, want the other writer's content", b)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".edit-*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// TestEmbeddedPythonQuoting: the python programs travel inside single quotes of sh -c, so
// one single quote in them (a comment's apostrophe) would break every call.
func TestEmbeddedPythonQuoting(t *testing.T) {
	for name, body := range map[string]string{
		"norepl": strings.TrimSuffix(strings.TrimPrefix(norepl, "norepl='"), "'\n"),
		"edit":   editScript[strings.Index(editScript, "python3 -c '")+len("python3 -c '") : strings.LastIndex(editScript, "' \"$N\"")],
	} {
		if len(body) < 100 || strings.Contains(body, "'") {
			t.Errorf("%s: %d bytes, a single quote at %d", name, len(body), strings.Index(body, "'"))
		}
	}
}
