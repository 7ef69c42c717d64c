package conntest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/proc"
)

// Processes run through nothing but Exec, so every strategy must carry the scripts of
// conn/proc: detached starts, output files, stdin FIFOs, group signals.
var procCases = []struct {
	name string
	fn   func(*testing.T, NewConn)
}{
	{"ProcessOutputAndExit", testProcOutputAndExit},
	{"ProcessStdin", testProcStdin},
	{"ProcessSignalKillsGroup", testProcSignalGroup},
	{"ProcessCwdEnvList", testProcCwdEnvList},
	{"ProcessOutputCap", testProcOutputCap},
	{"ProcessErrors", testProcErrors},
	{"ProcessLeftoversAndUmask", testProcLeftovers},
}

// runner keeps process state in the test's fresh working directory (relative to it), so
// listings see only this test's processes.
func (e env) runner() proc.Runner {
	r := proc.Runner{Exec: e.c, Root: ".procs"}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		list, _ := r.List(ctx, e.tg)
		for _, p := range list {
			_ = r.Signal(ctx, e.tg, p.ID, "KILL")
		}
		// The supervisor writes the exit status after the kill: let it finish before the
		// working directory is removed.
		for _, p := range list {
			for range 100 {
				if o, err := r.Read(ctx, e.tg, proc.ReadRequest{ID: p.ID, FetchBytes: 1}); err != nil || !o.Running {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	})
	return r
}

// readUntil long-polls a process until done says it has what the test waits for.
func (e env) readUntil(r proc.Runner, id string, done func(out, errOut string, o proc.Output) bool) (string, string, proc.Output) {
	e.t.Helper()
	var out, errOut strings.Builder
	var so, se int64
	deadline := time.Now().Add(callTimeout)
	for time.Now().Before(deadline) {
		o, err := r.Read(e.ctx(), e.tg, proc.ReadRequest{ID: id, SinceStdout: so, SinceStderr: se, FetchBytes: 1 << 20, Wait: 5 * time.Second})
		if err != nil {
			e.t.Fatalf("Read(%s): %v", id, err)
		}
		if !o.Stdout.Window.Whole() || !o.Stderr.Window.Whole() {
			e.t.Fatalf("Read(%s): output too long for the test", id)
		}
		out.Write(o.Stdout.Window.Head)
		errOut.Write(o.Stderr.Window.Head)
		so, se = o.Stdout.End, o.Stderr.End
		if done(out.String(), errOut.String(), o) {
			return out.String(), errOut.String(), o
		}
	}
	e.t.Fatalf("process %s: gave up waiting; stdout so far %q, stderr %q", id, out.String(), errOut.String())
	return "", "", proc.Output{}
}

func ended(_, _ string, o proc.Output) bool { return !o.Running }

func testProcOutputAndExit(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	r := e.runner()
	start := time.Now()
	p, err := r.Start(e.ctx(), e.tg, proc.Spec{Command: "echo out; sleep 2; echo err >&2; exit 3", Name: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Start took %s: it must not wait for the process", d)
	}
	out, errOut, o := e.readUntil(r, p.ID, ended)
	if out != "out\n" || errOut != "err\n" || o.ExitCode == nil || *o.ExitCode != 3 {
		t.Fatalf("got stdout %q stderr %q exit %v, want \"out\\n\", \"err\\n\", 3", out, errOut, o.ExitCode)
	}
	// A fresh runner (another server, another replica) reads the same handle from scratch.
	again, err := proc.Runner{Exec: e.c, Root: ".procs"}.Read(e.ctx(), e.tg, proc.ReadRequest{ID: p.ID, FetchBytes: 4000})
	if err != nil || string(again.Stdout.Window.Head) != "out\n" || again.Running {
		t.Fatalf("re-read from offset 0: %+v, %v", again, err)
	}
}

func testProcStdin(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	r := e.runner()
	p, err := r.Start(e.ctx(), e.tg, proc.Spec{Command: `read a; echo "got:$a"; cat; echo eof`})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Write(e.ctx(), e.tg, p.ID, []byte("hello\n"), false); err != nil {
		t.Fatal(err)
	}
	e.readUntil(r, p.ID, func(out, _ string, _ proc.Output) bool { return strings.Contains(out, "got:hello\n") })
	if err := r.Write(e.ctx(), e.tg, p.ID, []byte("tail-"), true); err != nil {
		t.Fatal(err)
	}
	_, _, o := e.readUntil(r, p.ID, ended)
	if o.ExitCode == nil || *o.ExitCode != 0 || !o.StdinClosed {
		t.Fatalf("after closing stdin: %+v", o)
	}
	full, err := r.Read(e.ctx(), e.tg, proc.ReadRequest{ID: p.ID, FetchBytes: 4000})
	if err != nil || string(full.Stdout.Window.Head) != "got:hello\ntail-eof\n" {
		t.Fatalf("whole output %q, %v", full.Stdout.Window.Head, err)
	}
	if err := r.Write(e.ctx(), e.tg, p.ID, []byte("x"), false); !errors.Is(err, proc.ErrEnded) {
		t.Fatalf("write after exit: %v, want ErrEnded", err)
	}
}

func testProcSignalGroup(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	r := e.runner()
	p, err := r.Start(e.ctx(), e.tg, proc.Spec{Command: `sleep 300 & echo $! > child.pid; echo started; wait`})
	if err != nil {
		t.Fatal(err)
	}
	e.readUntil(r, p.ID, func(out, _ string, _ proc.Output) bool { return out == "started\n" })
	if err := r.Signal(e.ctx(), e.tg, p.ID, "TERM"); err != nil {
		t.Fatal(err)
	}
	_, _, o := e.readUntil(r, p.ID, ended)
	if o.ExitCode == nil || *o.ExitCode != 128+15 {
		t.Fatalf("exit after TERM: %v, want 143", o.ExitCode)
	}
	// Dead, or a zombie its new parent has yet to reap.
	gone := `p=$(cat child.pid); i=0; while [ $i -lt 50 ]; do ` +
		`kill -0 $p 2>/dev/null && ! grep -q ') Z' /proc/$p/stat 2>/dev/null || exit 1; sleep 0.1; i=$((i+1)); done; echo alive`
	if out, _, code := e.sh(gone); code == 0 || out != "" {
		t.Fatalf("the process's child survived a signal to its group (%q)", out)
	}
	e.endedForSignals(r, p.ID)
}

// endedForSignals waits until a signal to the process answers ErrEnded: its group is empty
// once the kernel has reaped what the process left.
func (e env) endedForSignals(r proc.Runner, id string) {
	e.t.Helper()
	var err error
	for range 50 {
		if err = r.Signal(e.ctx(), e.tg, id, "KILL"); errors.Is(err, proc.ErrEnded) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("signal to an ended process with an empty group: %v, want ErrEnded", err)
}

func testProcCwdEnvList(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	r := e.runner()
	e.mustSh("mkdir -p sub/dir")
	a, err := r.Start(e.ctx(), e.tg, proc.Spec{Argv: []string{"sh", "-c", `echo "$(basename "$PWD") $FOO $BAR"`},
		Cwd: "sub/dir", Env: map[string]string{"FOO": "x y", "BAR": "$HOME"}, Name: "env-check"})
	if err != nil {
		t.Fatal(err)
	}
	out, _, _ := e.readUntil(r, a.ID, ended)
	if out != "dir x y $HOME\n" {
		t.Fatalf("cwd and env: got %q, want %q", out, "dir x y $HOME\n")
	}
	b, err := r.Start(e.ctx(), e.tg, proc.Spec{Command: "sleep 300", Name: "sleeper"})
	if err != nil {
		t.Fatal(err)
	}
	list, err := r.List(e.ctx(), e.tg)
	if err != nil || len(list) != 2 {
		t.Fatalf("List: %+v, %v", list, err)
	}
	byID := map[string]proc.Info{list[0].ID: list[0], list[1].ID: list[1]}
	if x := byID[a.ID]; x.Name != "env-check" || x.Running || x.ExitCode == nil || x.Command != "sh" || x.Cwd != "sub/dir" {
		t.Fatalf("ended process listed as %+v", x)
	}
	if x := byID[b.ID]; x.Name != "sleeper" || !x.Running || x.Command != "sleep 300" {
		t.Fatalf("running process listed as %+v", x)
	}
	if _, err := r.Start(e.ctx(), e.tg, proc.Spec{Command: "true", Cwd: "no/such/dir"}); !errors.Is(err, proc.ErrNoCwd) {
		t.Fatalf("missing cwd: %v, want ErrNoCwd", err)
	}
}

func testProcOutputCap(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	r := e.runner()
	r.MaxOutputBytes = proc.MinMaxOutputBytes
	const total = 5 * proc.SegmentBytes
	p, err := r.Start(e.ctx(), e.tg, proc.Spec{Command: "head -c 5242880 /dev/zero | tr '\\0' a; printf END"})
	if err != nil {
		t.Fatal(err)
	}
	e.readUntil(r, p.ID, func(_, _ string, o proc.Output) bool { return !o.Running })
	// From the start: the oldest output is gone, the window starts at the first byte kept.
	o, err := r.Read(e.ctx(), e.tg, proc.ReadRequest{ID: p.ID, FetchBytes: 4000})
	if err != nil {
		t.Fatal(err)
	}
	if o.Stdout.End != total+3 || o.Stdout.First < total-proc.MinMaxOutputBytes || o.Stdout.Start != o.Stdout.First {
		t.Fatalf("stream state %+v, want end %d and older output dropped", o.Stdout, total+3)
	}
	w := o.Stdout.Window
	if w.Whole() || !strings.HasSuffix(string(w.Tail), "aEND") || int64(len(w.Head)) != 4000 {
		t.Fatalf("window: head %d bytes, tail ...%q, gap %d", len(w.Head), tailOf(w.Tail), w.Gap)
	}
	// A page reads forward from since, no further than the budget needs.
	pg, err := r.Read(e.ctx(), e.tg, proc.ReadRequest{ID: p.ID, FetchBytes: 4000, Page: true, SinceStdout: total - 10})
	if err != nil || string(pg.Stdout.Window.Head) != "aaaaaaaaaaEND" || pg.Stdout.Start != total-10 {
		t.Fatalf("page at the end: %q from %d, %v", pg.Stdout.Window.Head, pg.Stdout.Start, err)
	}
}

func testProcErrors(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	r := e.runner()
	if _, err := r.Read(e.ctx(), e.tg, proc.ReadRequest{ID: "pnosuchproc", FetchBytes: 4000}); !errors.Is(err, proc.ErrNoProcess) {
		t.Fatalf("read of a missing process: %v", err)
	}
	if err := r.Signal(e.ctx(), e.tg, "pnosuchproc", "TERM"); !errors.Is(err, proc.ErrNoProcess) {
		t.Fatalf("signal to a missing process: %v", err)
	}
	p, err := r.Start(e.ctx(), e.tg, proc.Spec{Command: "cat"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Write(e.ctx(), e.tg, p.ID, nil, true); err != nil {
		t.Fatal(err)
	}
	if err := r.Write(e.ctx(), e.tg, p.ID, []byte("late"), false); !errors.Is(err, proc.ErrStdinClosed) && !errors.Is(err, proc.ErrEnded) {
		t.Fatalf("write after close: %v", err)
	}
}

func tailOf(b []byte) string {
	if len(b) > 20 {
		return string(b[len(b)-20:])
	}
	return string(b)
}

// testProcLeftovers: a background job the process left behind is still signalled after the
// process ended, and the process runs with the runtime's umask, not the state directory's.
func testProcLeftovers(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	r := e.runner()
	want := e.mustSh("umask")
	p, err := r.Start(e.ctx(), e.tg, proc.Spec{Command: `sleep 300 & echo $! > left.pid; umask`})
	if err != nil {
		t.Fatal(err)
	}
	out, _, _ := e.readUntil(r, p.ID, ended)
	if out != want {
		t.Errorf("umask in the process %q, want the runtime's %q", out, want)
	}
	if err := r.Signal(e.ctx(), e.tg, p.ID, "KILL"); err != nil {
		t.Fatalf("signal to the group left behind: %v", err)
	}
	gone := `p=$(cat left.pid); i=0; while [ $i -lt 50 ]; do ` +
		`kill -0 $p 2>/dev/null && ! grep -q ') Z' /proc/$p/stat 2>/dev/null || exit 1; sleep 0.1; i=$((i+1)); done; echo alive`
	if out, _, code := e.sh(gone); code == 0 || out != "" {
		t.Fatalf("the background job survived KILL to its group (%q)", out)
	}
	e.endedForSignals(r, p.ID)
}
