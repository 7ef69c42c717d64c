package conn

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The python runtime has no shell (/execute shlex-splits the command and runs it without
// one), ignores the request's timeout, and starts every command in a new session, so the
// command's pid is also its process-group id. Each command carries a random token (see
// markedCommand) that every process it starts inherits. On timeout or cancellation killScript, in a second /execute,
// finds the processes carrying the token and kills their process groups: the command's own,
// and any a child made with setsid. No wrapper shell, pid file or clean-up runs per command.
const (
	runTokenVar = "K8S_SANDBOX_MCP_RUN"
	// killScript ($0 is runTokenVar, $1 the token's value) retries for a moment, as the command
	// may have only just started. One grep reads every process's environment and command line;
	// the token reaches it on stdin and is never whole in the cmdline of the script or its
	// subshells, so only the command's processes match. A process of the command that leads no
	// group makes kill fail harmlessly. dash's kill needs "-s KILL": "-KILL --" fails.
	killScript = `t="$0=$1"; i=0; while [ $i -lt 20 ]; do f=; ` +
		`for e in $(printf '%s' "$t" | grep -lzxF -f - /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null); do ` +
		`p=${e#/proc/}; p=${p%/*}; f=1; kill -s KILL -- "-$p" 2>/dev/null; done; ` +
		`[ -z "$f" ] || exit 0; sleep 0.1; i=$((i+1)); done; exit 0`
	// routerSlack keeps the router's own timeout (X-Sandbox-Timeout) behind ours, so the
	// caller sees ErrTimeout rather than a router 504.
	routerSlack = 5 * time.Second
	killTimeout = 5 * time.Second
)

// PyRuntimeExecLimit is the python runtime's own limit on one /execute
// (SANDBOX_EXEC_TIMEOUT_SECONDS, its default): a longer timeout cannot outlast it.
const PyRuntimeExecLimit = 300 * time.Second

func (p *pyConn) Exec(ctx context.Context, t Target, req ExecRequest) (ExecResult, error) {
	argv, err := execArgv(req)
	if err != nil {
		return ExecResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return ExecResult{}, fmt.Errorf("exec: %w", err)
	}
	token, err := newRunToken()
	if err != nil {
		return ExecResult{}, err
	}
	runCtx, cancel := withExecTimeout(ctx, req.Timeout)
	defer cancel()
	var hint time.Duration
	if req.Timeout > 0 {
		hint = req.Timeout + routerSlack
	}
	command := markedCommand(req, argv, token)
	resp, mayRun, err := p.post(runCtx, t, command, hint)
	if err != nil {
		if mayRun {
			p.killGroup(ctx, t, token)
		}
		return ExecResult{}, execError(ctx, runCtx, req.Timeout, err)
	}
	defer resp.Body.Close()
	// The runtime answers once the command has ended; its output streams through the writers.
	// stderr's start is held back until we know it is not the runtime's own timeout reply,
	// which would only show our wrapper's argv.
	stdout := &countingWriter{w: req.Stdout}
	stderr := &heldWriter{w: req.Stderr, hold: runtimeTimeoutProbe}
	code, err := decodeExecStream(resp.Body, stdout, stderr)
	if err != nil {
		return ExecResult{}, execError(ctx, runCtx, req.Timeout, fmt.Errorf("exec: reading the response: %w", err))
	}
	if stdout.n == 0 && isRuntimeTimeout(code, stderr.held) {
		return ExecResult{}, fmt.Errorf("exec: %w: the runtime's own limit (SANDBOX_EXEC_TIMEOUT_SECONDS, %d s by default) "+
			"ended the command before the requested %s", ErrTimeout, int(PyRuntimeExecLimit.Seconds()), req.Timeout)
	}
	if err := stderr.flush(); err != nil {
		return ExecResult{}, fmt.Errorf("exec: writing stderr: %w", err)
	}
	if code == nil {
		return ExecResult{ExitCode: -1}, nil // what the upstream SDK assumes when the field is missing
	}
	return ExecResult{ExitCode: *code}, nil
}

// post sends one /execute, never retried: commands are not idempotent. mayRun reports
// whether, after an error, the command could still be running in the sandbox. On success the
// caller reads and closes the body.
func (p *pyConn) post(ctx context.Context, t Target, command string, hint time.Duration) (*http.Response, bool, error) {
	body, err := json.Marshal(map[string]string{"command": command})
	if err != nil {
		return nil, false, fmt.Errorf("exec: encoding request: %w", err)
	}
	resp, err := p.do(ctx, t, request{op: "exec", method: http.MethodPost, path: "/execute",
		body: bytes.NewReader(body), contentType: "application/json", timeoutHint: hint})
	if err != nil {
		var pre *preSendError
		return nil, !errors.As(err, &pre), err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		// A 5xx comes from a router or proxy whose upstream call failed or timed out: the
		// command may have started. A 4xx was refused before reaching the runtime.
		return nil, resp.StatusCode >= 500, statusError("exec", resp)
	}
	return resp, false, nil
}

// killGroup kills the process groups of the command run with token, best effort, on a
// fresh context: the caller's may already be cancelled.
func (p *pyConn) killGroup(ctx context.Context, t Target, token string) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
	defer cancel()
	name, value, _ := strings.Cut(token, "=")
	if resp, _, err := p.post(kctx, t, shJoin([]string{"/bin/sh", "-c", killScript, name, value}), killTimeout); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}
}

// runtimeTimeoutProbe is how much of stderr isRuntimeTimeout needs to see.
const runtimeTimeoutProbe = 4096

// isRuntimeTimeout recognises the 200 response the runtime sends when its own timeout
// (not ours) killed the command: exit 1, no stdout, and this stderr.
func isRuntimeTimeout(code *int, stderrStart []byte) bool {
	s := string(stderrStart)
	return code != nil && *code == 1 &&
		strings.HasPrefix(s, "Failed to execute command: Command '") && strings.Contains(s, "' timed out after ")
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.w.Write(p)
}

// heldWriter keeps the first hold bytes until flush (or until more arrive), then passes
// everything through.
type heldWriter struct {
	w    io.Writer
	hold int
	held []byte
	open bool
}

func (h *heldWriter) Write(p []byte) (int, error) {
	if h.open {
		return h.w.Write(p)
	}
	if len(h.held)+len(p) <= h.hold {
		h.held = append(h.held, p...)
		return len(p), nil
	}
	if err := h.flush(); err != nil {
		return 0, err
	}
	return h.w.Write(p)
}

func (h *heldWriter) flush() error {
	if h.open {
		return nil
	}
	h.open = true
	if len(h.held) == 0 {
		return nil
	}
	_, err := h.w.Write(h.held)
	return err
}

// markedCommand returns the command line for /execute with token on the command's processes.
// A shell command needs no extra exec: the token is an argument of the shell (its own
// cmdline, where killScript looks too) and is exported to everything it starts. A program given as argv
// runs under env, which execs it with the token in its environment.
func markedCommand(req ExecRequest, argv []string, token string) string {
	if req.Command != "" && req.Cwd == "" && len(req.Env) == 0 && req.SaveOutput == "" {
		// On the script's first line, so the shell's error messages keep their line numbers;
		// the token is $1, shifted away, so $0 (the prefix of those messages) stays "sh".
		return shJoin([]string{"/bin/sh", "-c", `export "$1"; shift; ` + req.Command, "sh", token})
	}
	if strings.Contains(argv[0], "=") { // env would take the program for an assignment
		argv = append([]string{"/bin/sh", "-c", `exec "$@"`, "sh"}, argv...)
	}
	return shJoin(append([]string{"env", token}, argv...))
}

// newRunToken returns "K8S_SANDBOX_MCP_RUN=<random>", the environment entry that marks one
// command's processes.
func newRunToken() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("exec: generating a command id: %w", err)
	}
	return runTokenVar + "=" + hex.EncodeToString(b[:]), nil
}

// withExecTimeout derives the context a command runs under; its cause is ErrTimeout when
// the command's own timeout, not the caller, ended it.
func withExecTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout > 0 {
		return context.WithTimeoutCause(ctx, timeout, ErrTimeout)
	}
	return context.WithCancel(ctx)
}

// execError reports why a command ended early: the caller's ctx error, ErrTimeout, or err.
func execError(ctx, runCtx context.Context, timeout time.Duration, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("exec: %w", ctx.Err())
	}
	if errors.Is(context.Cause(runCtx), ErrTimeout) {
		return fmt.Errorf("exec: %w after %s (process group killed)", ErrTimeout, timeout)
	}
	return err
}
