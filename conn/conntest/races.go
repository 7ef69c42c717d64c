package conntest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/workspace"
)

// A process in the sandbox may swap a directory for a link to anywhere while a file tool
// runs. These cases win that race every time: the program a script runs after it has found
// its path (grep, tar, mv, rm, head, python3, mkdir) is a shim ahead of the real one on
// PATH that first swaps d for a link to a directory outside the working directory. Whatever
// the operation then does, nothing outside may be read, moved, removed or created.

// swapShims makes a shim for each program in progs, in .shim of the working directory: the
// first shim run moves d to d.real and links d to out, then each runs the real program. It
// returns the FS that runs with .shim first on PATH.
func (e env) swapShims(out string, progs ...string) workspace.FS {
	e.t.Helper()
	base := strings.TrimSpace(e.mustSh("pwd -P"))
	path := strings.TrimSpace(e.mustSh(`printf %s "$PATH"`))
	e.mustSh("mkdir -p .shim")
	for _, p := range progs {
		real := strings.TrimSpace(e.mustScript(`command -v "$1"`, p))
		e.mustScript(`printf '#!/bin/sh\n[ -e "%s/.swapped" ] || { : > "%s/.swapped"; mv "%s/d" "%s/d.real" && ln -s "%s" "%s/d"; }\nexec "%s" "$@"\n' \
  "$1" "$1" "$1" "$1" "$2" "$1" "$3" > ".shim/$4" && chmod +x ".shim/$4"`, base, out, real, p)
	}
	return workspace.FS{Exec: pathExec{c: e.c, path: base + "/.shim:" + path}}
}

func testSwappedForLink(t *testing.T, newConn NewConn) {
	for _, tc := range []struct {
		name  string
		progs []string
		op    func(e env, fs workspace.FS) (string, error)
	}{
		{"read", []string{"head"}, func(e env, fs workspace.FS) (string, error) {
			r, err := fs.ReadLines(e.ctx(), e.tg, "d/f", 1, 10, 100, 1000)
			return fmt.Sprint(r), err
		}},
		{"edit", []string{"python3"}, func(e env, fs workspace.FS) (string, error) {
			_, err := fs.EditFile(e.ctx(), e.tg, "d/f", "inside", "edited", false, 0)
			return "", err
		}},
		{"search", []string{"grep"}, func(e env, fs workspace.FS) (string, error) {
			r, err := fs.Search(e.ctx(), e.tg, "d", "canary|inside", "", 10, 200, false)
			return strings.Join(r.Results, "\n"), err
		}},
		{"search with a path glob", []string{"grep"}, func(e env, fs workspace.FS) (string, error) {
			r, err := fs.Search(e.ctx(), e.tg, "d", "canary|inside", "*/f", 10, 200, false)
			return strings.Join(r.Results, "\n"), err
		}},
		{"pack", []string{"tar"}, func(e env, fs workspace.FS) (string, error) {
			tmp, _ := workspace.TempName()
			_, err := fs.Pack(e.ctx(), e.tg, "d", tmp)
			if err != nil {
				return "", err
			}
			return e.mustScript(`tar -xzOf "$1"; rm -f "$1"`, tmp), nil
		}},
		{"unpack into", []string{"tar"}, func(e env, fs workspace.FS) (string, error) {
			tmp, _ := workspace.TempName()
			e.upload(tmp, archiveOf(e.t, true, [2]string{"new.txt", "n\n"}, [2]string{"sub/", ""}, [2]string{"sub/x", "x\n"}))
			_, err := fs.Unpack(e.ctx(), e.tg, tmp, "d")
			return "", err
		}},
		{"unpack into a new directory", []string{"tar"}, func(e env, fs workspace.FS) (string, error) {
			tmp, _ := workspace.TempName()
			e.upload(tmp, archiveOf(e.t, false, [2]string{"new.txt", "n\n"}))
			_, err := fs.Unpack(e.ctx(), e.tg, tmp, "d/a/b")
			return "", err
		}},
		{"mkdir", []string{"mkdir"}, func(e env, fs workspace.FS) (string, error) {
			return "", fs.MakeDir(e.ctx(), e.tg, "d/new/deeper")
		}},
		{"remove", []string{"rm"}, func(e env, fs workspace.FS) (string, error) {
			return "", fs.Remove(e.ctx(), e.tg, "d/f", false)
		}},
		{"move from", []string{"mv", "python3"}, func(e env, fs workspace.FS) (string, error) {
			return "", fs.Move(e.ctx(), e.tg, "d/f", "moved", true)
		}},
		{"move from, no overwrite", []string{"mv", "python3", "ln"}, func(e env, fs workspace.FS) (string, error) {
			return "", fs.Move(e.ctx(), e.tg, "d/f", "moved", false)
		}},
		{"move into", []string{"mv", "mkdir", "python3", "ln"}, func(e env, fs workspace.FS) (string, error) {
			return "", fs.Move(e.ctx(), e.tg, "g", "d/g", false)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t, newConn)
			out := e.outsideDir()
			e.mustScript(`mkdir d && printf 'inside\n' > d/f && printf 'g\n' > g && printf 'canary\n' > "$1/f"`, out)
			fs := e.swapShims(out, tc.progs...)
			got, err := tc.op(e, fs)
			if err != nil && !errors.Is(err, conn.ErrDenied) && !errors.Is(err, conn.ErrNotFound) {
				t.Errorf("%s with d swapped for a link out: %v, want success, ErrDenied or ErrNotFound", tc.name, err)
			}
			if strings.Contains(got, "canary") {
				t.Errorf("%s read the file outside: %q", tc.name, got)
			}
			if o := e.mustScript(`[ -e .swapped ] && readlink d; ls -A "$1"; cat "$1/f"`, out); o != out+"\nf\ncanary\n" {
				t.Errorf("%s: the swap, then the outside directory (only f, holding canary): %q", tc.name, o)
			}
		})
	}
}

// testConcurrentEdits: concurrent edits of one file, each its own line: each either succeeds
// and its change is in the file, or fails with ErrChanged; never success and lost.
func testConcurrentEdits(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	fs := workspace.FS{Exec: e.c}
	const n = 10
	var lines strings.Builder
	for i := range n {
		fmt.Fprintf(&lines, "line %d\n", i)
	}
	e.upload("f.txt", []byte(lines.String()))
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = fs.EditFile(e.ctx(), e.tg, "f.txt", fmt.Sprintf("line %d\n", i), fmt.Sprintf("edit %d\n", i), false, 0)
		}()
	}
	wg.Wait()
	final := string(e.download("f.txt"))
	for i, err := range errs {
		done := strings.Contains(final, fmt.Sprintf("edit %d\n", i))
		switch {
		case err == nil && !done:
			t.Errorf("edit %d answered ok, but the file lacks it:\n%s", i, final)
		case err != nil && !errors.Is(err, workspace.ErrChanged):
			t.Errorf("edit %d: %v, want success or ErrChanged", i, err)
		case err != nil && done:
			t.Errorf("edit %d failed (%v), but the file has it", i, err)
		}
	}
	if got := e.mustSh("ls -A | grep -c edit- || true"); got != "0\n" {
		t.Errorf("temporary files left: %q", got)
	}
}

// testMoveNoOverwriteClaimed: another process makes the destination after the script's
// checks and before its rename (a shim of every program the rename may run does it first):
// the move must answer ErrExists and leave both files as they were.
func testMoveNoOverwriteClaimed(t *testing.T, newConn NewConn) {
	for _, src := range []string{"file", "dir"} {
		t.Run(src, func(t *testing.T) {
			e := setup(t, newConn)
			base := strings.TrimSpace(e.mustSh("pwd -P"))
			path := strings.TrimSpace(e.mustSh(`printf %s "$PATH"`))
			e.mustSh(`mkdir .shim dst && printf 'src\n' > file && mkdir dir && printf 'src\n' > dir/f`)
			for _, p := range []string{"mv", "mkdir", "python3", "ln"} {
				real := strings.TrimSpace(e.mustScript(`command -v "$1"`, p))
				e.mustScript(`printf '#!/bin/sh\n[ -e "%s/.claimed" ] || { : > "%s/.claimed"; printf "other\\n" > "%s/dst/x"; }\nexec "%s" "$@"\n' "$1" "$1" "$1" "$2" > ".shim/$3" && chmod +x ".shim/$3"`,
					base, real, p)
			}
			fs := workspace.FS{Exec: pathExec{c: e.c, path: base + "/.shim:" + path}}
			if err := fs.Move(e.ctx(), e.tg, src, "dst/x", false); !errors.Is(err, workspace.ErrExists) {
				t.Errorf("move onto a destination made during the move: %v, want ErrExists", err)
			}
			if got := e.mustScript(`cat dst/x; cat "$1" 2>/dev/null || cat "$1/f"`, src); got != "other\nsrc\n" {
				t.Errorf("the other's destination, then the source: %q", got)
			}
		})
	}
}

// testConcurrentMoves: pairs of moves without overwrite into one destination: exactly one of
// each pair succeeds, the other answers ErrExists, and no file is lost.
func testConcurrentMoves(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	fs := workspace.FS{Exec: e.c}
	const pairs = 10
	e.mustSh(fmt.Sprintf(`for i in $(seq %d); do echo "a$i" > "a$i"; echo "b$i" > "b$i"; done`, pairs))
	for i := 1; i <= pairs; i++ {
		var wg sync.WaitGroup
		var errA, errB error
		dst := fmt.Sprintf("dst%d", i)
		wg.Add(2)
		go func() { defer wg.Done(); errA = fs.Move(e.ctx(), e.tg, fmt.Sprintf("a%d", i), dst, false) }()
		go func() { defer wg.Done(); errB = fs.Move(e.ctx(), e.tg, fmt.Sprintf("b%d", i), dst, false) }()
		wg.Wait()
		okA, okB := errA == nil, errB == nil
		if okA == okB || !okA && !errors.Is(errA, workspace.ErrExists) || !okB && !errors.Is(errB, workspace.ErrExists) {
			t.Errorf("pair %d: %v and %v, want one success and one ErrExists", i, errA, errB)
		}
	}
	// Every file is still somewhere: the winner at its destination, the loser at its source.
	if got := e.mustSh("cat a* b* dst* 2>/dev/null | sort | tr '\\n' ' '"); strings.Count(got, " ") != 2*pairs {
		t.Errorf("files left: %q, want all %d", got, 2*pairs)
	}
}
