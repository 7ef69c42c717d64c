// Package conntest is the conformance suite every conn strategy passes: the tools rely on
// these behaviours being the same whichever way a sandbox is reached.
package conntest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// NewConn returns a Conn and the Target it reaches. Each call must give a fresh, empty
// working directory: relative paths of file operations and the working directory of
// commands both resolve in it.
type NewConn func(t *testing.T) (conn.Conn, conn.Target)

// callTimeout is what the tools use by default.
const callTimeout = 60 * time.Second

// Run runs the conformance suite against the strategy newConn builds.
func Run(t *testing.T, newConn NewConn) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, NewConn)
	}{
		{"ExecEcho", testEcho},
		{"ExecStdoutStderrExitCode", testStreamsAndExit},
		{"ExecShellSemantics", testShellSemantics},
		{"ExecQuoting", testQuoting},
		{"ExecArgv", testArgv},
		{"ExecArgvMissingProgram", testArgvMissing},
		{"ExecCwdEnvStdin", testCwdEnvStdin},
		{"ExecSaveOutput", testSaveOutput},
		{"ExecSaveOutputRefusesLinks", testSaveOutputLinks},
		{"ExecLargeOutput", testLargeOutput},
		{"ExecConcurrent", testConcurrent},
		{"ExecTimeoutKillsProcessGroup", testTimeoutKillsGroup},
		{"ExecCancelKillsProcessGroup", testCancelKillsGroup},
		{"UploadDownloadBinary", testRoundTrip},
		{"UploadEmptyAndOverwrite", testEmptyAndOverwrite},
		{"UploadDownloadStreaming", testStreaming},
		{"TrickyNames", testTrickyNames},
		{"UploadRejectsBadPaths", testBadUploadPaths},
		{"DownloadErrors", testDownloadErrors},
		{"List", testList},
		{"ListErrors", testListErrors},
		{"ListWithDanglingLink", testListDanglingLink},
		{"Exists", testExists},
		{"PathsAboveTheWorkingDirectory", testPathsAbove},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newConn) })
	}
	for _, tc := range append(procCases, workspaceCases...) {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newConn) })
	}
}

// env is one subtest's connection.
type env struct {
	t  *testing.T
	c  conn.Conn
	tg conn.Target
}

func setup(t *testing.T, newConn NewConn) env {
	t.Helper()
	c, tg := newConn(t)
	return env{t: t, c: c, tg: tg}
}

func (e env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(e.t.Context(), callTimeout)
	e.t.Cleanup(cancel)
	return ctx
}

// exec runs a request, collecting its output.
func (e env) exec(ctx context.Context, req conn.ExecRequest) (stdout, stderr string, res conn.ExecResult, err error) {
	var out, errOut syncBuffer
	req.Stdout, req.Stderr = &out, &errOut
	if req.Timeout == 0 {
		req.Timeout = callTimeout
	}
	res, err = e.c.Exec(ctx, e.tg, req)
	return out.String(), errOut.String(), res, err
}

// sh runs a shell command that must not fail to run.
func (e env) sh(cmd string) (stdout, stderr string, code int) {
	e.t.Helper()
	stdout, stderr, res, err := e.exec(e.ctx(), conn.ExecRequest{Command: cmd})
	if err != nil {
		e.t.Fatalf("Exec(%q): %v", cmd, err)
	}
	return stdout, stderr, res.ExitCode
}

// mustSh runs a shell command that must exit 0.
func (e env) mustSh(cmd string) string {
	e.t.Helper()
	out, errOut, code := e.sh(cmd)
	if code != 0 {
		e.t.Fatalf("Exec(%q): exit %d, stdout %q, stderr %q", cmd, code, out, errOut)
	}
	return out
}

// mustScript runs a shell script with args as $1..., never spliced into its text, and
// requires exit 0.
func (e env) mustScript(script string, args ...string) string {
	e.t.Helper()
	out, errOut, res, err := e.exec(e.ctx(), conn.ExecRequest{Argv: append([]string{"/bin/sh", "-c", script, "sh"}, args...)})
	if err != nil || res.ExitCode != 0 {
		e.t.Fatalf("script %q %q: exit %d, %v, stdout %q, stderr %q", script, args, res.ExitCode, err, out, errOut)
	}
	return out
}

func testEcho(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	out, errOut, code := e.sh("echo hello")
	if out != "hello\n" || errOut != "" || code != 0 {
		t.Fatalf("got stdout %q stderr %q exit %d, want \"hello\\n\", \"\", 0", out, errOut, code)
	}
}

func testStreamsAndExit(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	for _, tc := range []struct {
		cmd, out, err string
		code          int
	}{
		{"echo out; echo err >&2; exit 3", "out\n", "err\n", 3},
		{"false", "", "", 1},
		{"exit 0", "", "", 0},
		{"no-such-command-k8s-sandbox-mcp", "", "not found", 127},
	} {
		out, errOut, code := e.sh(tc.cmd)
		if out != tc.out || !strings.Contains(errOut, tc.err) || code != tc.code {
			t.Errorf("%q: got stdout %q stderr %q exit %d, want %q, containing %q, %d", tc.cmd, out, errOut, code, tc.out, tc.err, tc.code)
		}
	}
}

func testShellSemantics(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	if out := e.mustSh("echo a && echo b | tr b c > f; cat f"); out != "a\nc\n" {
		t.Fatalf("got %q, want %q: operators must be interpreted by a shell", out, "a\nc\n")
	}
	if out := e.mustSh("cd / && pwd; X=1; echo $((X+1)) `echo sub` $(echo s2)"); out != "/\n2 sub s2\n" {
		t.Fatalf("got %q, want %q", out, "/\n2 sub s2\n")
	}
}

func testQuoting(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	for _, tc := range []struct{ cmd, want string }{
		{`echo 'it'\''s'`, "it's\n"},
		{`echo "double \"quoted\""`, "double \"quoted\"\n"},
		{`X=v; echo "$X" '$X' \$X`, "v $X $X\n"},
		{"echo one\necho two", "one\ntwo\n"},
		{"printf '%s\\n' 'multi\nline'", "multi\nline\n"},
		{`echo 'héllo wörld ☃ 日本語'`, "héllo wörld ☃ 日本語\n"},
		{`printf '%s' 'a\b\\c'`, `a\b\\c`},
		{`echo 'a;b|c&&d>e' "*"`, "a;b|c&&d>e *\n"},
		{"printf '%s|' '' ' ' \"\"", "| ||"},
		{"echo \"tab\there\"", "tab\there\n"},
	} {
		if out := e.mustSh(tc.cmd); out != tc.want {
			t.Errorf("%q: got %q, want %q", tc.cmd, out, tc.want)
		}
	}
	home := e.mustSh(`printf '%s' "$HOME"`)
	if strings.Contains(home, "$") {
		t.Errorf("$HOME was not expanded: %q", home)
	}
}

func testArgv(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	args := []string{"it's", "$HOME", "a b", "two\nlines", "☃ ünï", `back\slash`, `"dq"`, "", "*", "; echo injected"}
	out, errOut, res, err := e.exec(e.ctx(), conn.ExecRequest{Argv: append([]string{"printf", "%s|"}, args...)})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Exec: exit %d err %v stderr %q", res.ExitCode, err, errOut)
	}
	if want := strings.Join(args, "|") + "|"; out != want {
		t.Fatalf("Argv must run without shell interpretation: got %q, want %q", out, want)
	}
}

func testArgvMissing(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	_, errOut, res, err := e.exec(e.ctx(), conn.ExecRequest{Argv: []string{"no-such-program-k8s-sandbox-mcp", "x"}})
	if err != nil || res.ExitCode != 127 || errOut == "" {
		t.Fatalf("got exit %d err %v stderr %q, want exit 127 with a message", res.ExitCode, err, errOut)
	}
}

func testLargeOutput(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	const n = 1_000_000
	out := e.mustSh(fmt.Sprintf("head -c %d /dev/zero | tr '\\000' a; echo done >&2", n))
	if len(out) != n || strings.Trim(out, "a") != "" {
		t.Fatalf("got %d bytes (%q...), want %d 'a's", len(out), out[:min(len(out), 20)], n)
	}
}

func testConcurrent(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Go(func() {
			out, _, res, err := e.exec(e.ctx(), conn.ExecRequest{Command: fmt.Sprintf("sleep 0.2; echo %d", i)})
			if err != nil || res.ExitCode != 0 || out != fmt.Sprintf("%d\n", i) {
				errs <- fmt.Errorf("command %d: out %q exit %d err %v", i, out, res.ExitCode, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// bgCommand leaves a grandchild that outlives its shell unless the whole group is killed.
const bgCommand = "sleep 30 & echo $! > bg.pid; wait"

// goneCheck exits 0 once the pid in bg.pid is gone (or a zombie nobody reaps yet).
const goneCheck = `p=$(cat bg.pid) && [ -n "$p" ] || { echo "no bg.pid"; exit 2; }; i=0; ` +
	`while [ $i -lt 50 ]; do if [ ! -d /proc/$p ] || grep -q '^State:[[:space:]]*Z' /proc/$p/status 2>/dev/null; ` +
	`then echo gone; exit 0; fi; sleep 0.1; i=$((i+1)); done; echo "alive: $p"; exit 1`

func (e env) assertBackgroundGone() {
	e.t.Helper()
	e.t.Cleanup(func() { // t.Context() is already cancelled here
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _, _, _ = e.exec(ctx, conn.ExecRequest{Command: `kill -9 $(cat bg.pid) 2>/dev/null; true`})
	})
	out, errOut, code := e.sh(goneCheck)
	if code != 0 {
		e.t.Fatalf("background process survived: %q %q (exit %d)", out, errOut, code)
	}
}

func testTimeoutKillsGroup(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	start := time.Now()
	_, _, _, err := e.exec(e.ctx(), conn.ExecRequest{Command: bgCommand, Timeout: time.Second})
	if !errors.Is(err, conn.ErrTimeout) {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("timeout took %s", d)
	}
	e.assertBackgroundGone()
}

func testCancelKillsGroup(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	ctx, cancel := context.WithCancel(e.ctx())
	defer cancel()
	time.AfterFunc(time.Second, cancel)
	_, _, _, err := e.exec(ctx, conn.ExecRequest{Command: bgCommand})
	if !errors.Is(err, context.Canceled) || errors.Is(err, conn.ErrTimeout) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	e.assertBackgroundGone()
}

// syncBuffer is a goroutine-safe bytes.Buffer: writers may be called from any goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testCwdEnvStdin: cwd and env apply to shell and argv commands alike, a missing cwd is exit
// 126 with a reason, and stdin is closed so a reader ends at once.
func testCwdEnvStdin(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	e.mustSh("mkdir -p sub/dir")
	env := map[string]string{"FOO": "a b", "BAR": "$HOME"}
	start := time.Now()
	out, errOut, res, err := e.exec(e.ctx(), conn.ExecRequest{Command: `basename "$PWD"; echo "$FOO|$BAR"; cat; echo done`,
		Cwd: "sub/dir", Env: env, Timeout: 30 * time.Second})
	if err != nil || res.ExitCode != 0 || out != "dir\na b|$HOME\ndone\n" {
		t.Fatalf("shell with cwd and env: %q %q %+v %v", out, errOut, res, err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("a command reading stdin took %s: stdin must be closed", d)
	}
	// Without a wrapper too: a plain shell command, and a program run as argv.
	for _, req := range []conn.ExecRequest{{Command: "cat; echo done"}, {Argv: []string{"cat"}}} {
		req.Timeout = 30 * time.Second
		start := time.Now()
		out, errOut, res, err := e.exec(e.ctx(), req)
		if err != nil || res.ExitCode != 0 || (req.Command != "" && out != "done\n") {
			t.Fatalf("%+v: %q %q %+v %v", req, out, errOut, res, err)
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Fatalf("%+v reading stdin took %s: stdin must be closed", req, d)
		}
	}
	out, _, res, err = e.exec(e.ctx(), conn.ExecRequest{Argv: []string{"sh", "-c", `echo "$FOO" "$(basename "$PWD")"`}, Cwd: "sub", Env: env})
	if err != nil || out != "a b sub\n" {
		t.Fatalf("argv with cwd and env: %q %+v %v", out, res, err)
	}
	_, errOut, res, err = e.exec(e.ctx(), conn.ExecRequest{Command: "echo never", Cwd: "no/such/dir"})
	if err != nil || res.ExitCode != 126 || !strings.Contains(errOut, "no such directory") {
		t.Fatalf("missing cwd: %q %+v %v", errOut, res, err)
	}
}

// testSaveOutput: the complete output lands in files (relative to the working directory, not
// to cwd) while it streams, and the exit code is kept.
func testSaveOutput(t *testing.T, newConn NewConn) {
	e := setup(t, newConn)
	e.mustSh("mkdir sub")
	out, errOut, res, err := e.exec(e.ctx(), conn.ExecRequest{Command: "seq 1 5; echo oops >&2; exit 4", Cwd: "sub", SaveOutput: "keep/run1"})
	if err != nil || res.ExitCode != 4 || out != "1\n2\n3\n4\n5\n" || errOut != "oops\n" {
		t.Fatalf("command with saved output: %q %q %+v %v", out, errOut, res, err)
	}
	if got := e.mustSh("cat keep/run1/stdout; cat keep/run1/stderr; ls -A keep/run1"); got != "1\n2\n3\n4\n5\noops\nstderr\nstdout\n" {
		t.Fatalf("saved files: %q", got)
	}
}

// testSaveOutputLinks: the directory for saved output lies under the server's state
// directory, which the sandbox may have replaced with a link out of the working directory
// (or a file). The command must not run and nothing may land outside.
func testSaveOutputLinks(t *testing.T, newConn NewConn) {
	for _, tc := range []struct {
		name, setup, want string
	}{
		{"state directory is a link out", `ln -s "$1" .k8s-sandbox-mcp`, ".k8s-sandbox-mcp is a symbolic link"},
		{"a directory under it is a link out", `mkdir .k8s-sandbox-mcp && ln -s "$1" .k8s-sandbox-mcp/output`, ".k8s-sandbox-mcp/output is a symbolic link"},
		{"state directory is a file", `echo x > .k8s-sandbox-mcp`, ".k8s-sandbox-mcp is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t, newConn)
			out := e.outsideDir()
			e.mustScript(tc.setup, out)
			_, errOut, res, err := e.exec(e.ctx(), conn.ExecRequest{Command: "echo ran > ran.txt", SaveOutput: ".k8s-sandbox-mcp/output/run1"})
			if err != nil || res.ExitCode != 125 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "the command did not run") {
				t.Errorf("exec: stderr %q, %+v, %v; want exit 125 saying %q", errOut, res, err, tc.want)
			}
			if got := e.mustScript(`ls -A "$1"; ls ran.txt 2>/dev/null || true`, out); got != "" {
				t.Errorf("outside the working directory, and the command's own file: %q, want nothing", got)
			}
		})
	}
}
