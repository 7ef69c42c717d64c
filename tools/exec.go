package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/output"
)

type execArgs struct {
	claimArgs
	Command        string            `json:"command"`
	Args           []string          `json:"args"`
	Cwd            string            `json:"cwd"`
	Env            map[string]string `json:"env"`
	SaveFullOutput bool              `json:"save_full_output"`
	Timeout        *int              `json:"timeout"`
	MaxOutputChars *int              `json:"max_output_chars"`
}

// ExecResult is execute_command's answer.
type ExecResult struct {
	ExitCode         int    `json:"exit_code"`
	Stdout           string `json:"stdout"`
	Stderr           string `json:"stderr"`
	StdoutTotalChars int    `json:"stdout_total_chars" jsonschema:"code points of stdout before truncation"`
	StderrTotalChars int    `json:"stderr_total_chars" jsonschema:"code points of stderr before truncation"`
	StdoutTruncated  bool   `json:"stdout_truncated" jsonschema:"true when part of stdout was omitted"`
	StderrTruncated  bool   `json:"stderr_truncated" jsonschema:"true when part of stderr was omitted"`
	Note             string `json:"note,omitempty" jsonschema:"why the command ended the way it did, when the exit code alone does not say"`
	StdoutFile       string `json:"stdout_file,omitempty" jsonschema:"with save_full_output: the file holding all of stdout (read it with read_file)"`
	StderrFile       string `json:"stderr_file,omitempty" jsonschema:"with save_full_output: the file holding all of stderr"`
}

// exitNote explains the exit codes a model cannot read on its own: a command killed by a
// signal. In a container the usual SIGKILL is the out-of-memory killer at the sandbox's memory
// limit. sandboxd reports -1 when the process it ran was itself killed by a signal (it does not
// say which); a shell reports 128+N for a child killed by signal N.
func exitNote(code int) string {
	switch {
	case code == 137 || code == -1:
		which := "SIGKILL (exit code 137)"
		if code == -1 {
			which = "a signal (the sandbox's runtime reports -1 and not which one)"
		}
		return "The command was killed by " + which + ". In a sandbox this is most often the out-of-memory killer: " +
			"the command needed more memory than the sandbox's limit. Use less memory (smaller inputs, streaming, " +
			"fewer parallel jobs) or a sandbox from a template with a higher memory limit."
	case code > 128 && code <= 128+64:
		return fmt.Sprintf("The command was killed by signal %d (exit code %d).", code-128, code)
	}
	return ""
}

func execTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("execute_command",
		mcp.WithToolTitle("Run a command in a sandbox"),
		mcp.WithDescription("Runs a shell command (/bin/sh -c), or with args a program without a shell, once; returns exit_code, stdout and stderr. stdin is closed."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "command"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(),
			"command": {"type": "string", "minLength": 1, "maxLength": maxCommandChars,
				"description": "Shell command; with args, the program."},
			"args": {"type": "array", "items": prop{"type": "string"}, "maxItems": maxArgv,
				"description": "Arguments; then no shell is used."},
			"cwd":              cwdProp(),
			"env":              envProp(),
			"save_full_output": boolProp("Also keep all output in stdout_file and stderr_file."),
			"timeout":          timeoutProp(),
			"max_output_chars": budgetProp(),
		})),
		outputSchema[ExecResult](),
		hints(false, true, false),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a execArgs
		if err := bind(req, &a); err != nil {
			return failure("execute the command", claimRef{}, err), nil
		}
		return d.execResult(ctx, req, "execute the command", a), nil
	}}
}

// execResult runs the command and turns its outcome into the tool result: a timeout keeps
// the output seen so far in the error text.
func (d Deps) execResult(ctx context.Context, req mcp.CallToolRequest, op string, a execArgs) *mcp.CallToolResult {
	res, ref, err := d.exec(ctx, req, a)
	if err != nil {
		if res != nil && errors.Is(err, conn.ErrTimeout) {
			return mcp.NewToolResultError(timeoutText(a, res))
		}
		return failure(op, ref, err)
	}
	return structured(*res)
}

func (d Deps) exec(ctx context.Context, req mcp.CallToolRequest, a execArgs) (*ExecResult, claimRef, error) {
	to := seconds(a.Timeout, defaultTimeout)
	budget := intArg(a.MaxOutputChars, output.DefaultBudget)
	if strings.TrimSpace(a.Command) == "" {
		return nil, claimRef{}, badInput("command is required and must not be blank")
	}
	if err := checkEnv(a.Env); err != nil {
		return nil, claimRef{}, err
	}
	c, ref, err := d.resolve(ctx, a.claimArgs)
	if err != nil {
		return nil, ref, err
	}
	capture := output.NewCapture(budget)
	creq := conn.ExecRequest{Timeout: to, Cwd: a.Cwd, Env: a.Env, Stdout: capture.Stdout(), Stderr: capture.Stderr()}
	if a.SaveFullOutput {
		dir, err := savedOutputDir()
		if err != nil {
			return nil, ref, err
		}
		creq.SaveOutput = dir
	}
	if a.Args != nil {
		creq.Argv = append([]string{a.Command}, a.Args...)
	} else {
		creq.Command = a.Command
	}
	p := newProgress(ctx, req)
	if p.enabled() {
		capture.TrackLines()
	}
	stop := d.heartbeats(p, capture, to)
	r, err := d.Conn.Exec(ctx, target(c), creq)
	stop()
	out := capture.Result()
	d.observe().Output(out.StdoutTotalChars+out.StderrTotalChars, utf8.RuneCountInString(out.Stdout)+utf8.RuneCountInString(out.Stderr))
	res := &ExecResult{ExitCode: r.ExitCode, Stdout: out.Stdout, Stderr: out.Stderr,
		StdoutTotalChars: out.StdoutTotalChars, StderrTotalChars: out.StderrTotalChars,
		StdoutTruncated: out.StdoutTruncated, StderrTruncated: out.StderrTruncated, Note: exitNote(r.ExitCode)}
	switch {
	case creq.SaveOutput != "" && r.ExitCode == 125 && strings.Contains(out.Stderr, "cannot save the output"):
		// conn's wrapper refused the output directory (a link or a file in its place), so
		// there are no files to point at and the command never started.
		res.Note = "The command did not run: its output could not be saved (stderr says why). Fix that, or run it without save_full_output."
	case creq.SaveOutput != "":
		res.StdoutFile, res.StderrFile = path.Join(creq.SaveOutput, "stdout"), path.Join(creq.SaveOutput, "stderr")
	}
	if err != nil {
		return res, ref, err
	}
	if killedBySignal(r.ExitCode) && d.sandboxStopped(ctx, a.claimArgs, target(c)) {
		return res, ref, errSandboxStopped
	}
	return res, ref, nil
}

// savedOutputDir names where one command's complete output is kept: in the working directory,
// where read_file and download_file reach it, one directory per command.
func savedOutputDir() (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("naming the output directory: %w", err)
	}
	return ".k8s-sandbox-mcp/output/" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:]), nil
}

// killedBySignal reports the exit codes of a command that a stopping sandbox also produces:
// -1 (sandboxd up to v1.0.1: its child was killed by a signal, it does not say which) and
// 128+n for SIGKILL and SIGTERM (a shell's report of its child, and newer sandboxd's of its
// own), which pod deletion sends. Other signals are the command's own business.
func killedBySignal(code int) bool {
	return code == -1 || code == 128+9 || code == 128+15
}

// errSandboxStopped: the runtime itself was stopped under the command (its pod deleted or
// restarted), which a bare signal exit code (-1, 137, 143) would pass off as the command's own end.
var errSandboxStopped = errors.New("the sandbox stopped while the command ran (its pod was deleted or restarted), which killed the command")

// sandboxStopped tells a command killed with the sandbox (pod deleted or restarted) from one
// killed alone (the OOM killer): the runtime stops answering, or the Sandbox stops being
// Ready. The runtime is the quicker sign (it exits right after reporting the kill; the
// Sandbox's condition waits for the kubelet and the controller, seconds on a busy node).
// Only asked after a signal kill, so ordinary commands pay nothing.
func (d Deps) sandboxStopped(ctx context.Context, a claimArgs, t conn.Target) bool {
	ref, owner, err := d.caller(ctx, a)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, d.stoppedWithin())
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := d.Claims.Status(ctx, ref.Namespace, ref.Name, owner)
		if errors.Is(err, kube.ErrNotFound) || (err == nil && !st.Ready) {
			return true
		}
		if d.runtimeGone(ctx, t) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// runtimeGone probes the runtime with a cheap read: refused or reset means it has exited. A
// probe that times out says nothing (an address with no host behind it can take seconds).
func (d Deps) runtimeGone(ctx context.Context, t conn.Target) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := d.Conn.Exists(ctx, t, ".")
	return errors.Is(err, conn.ErrUnreachable)
}

// heartbeats sends a progress notification every few seconds while the command runs, carrying
// its latest output line, so clients that reset their timeout on progress keep waiting.
func (d Deps) heartbeats(p *progress, c *output.Capture, limit time.Duration) (stop func()) {
	return d.tick(p, func(elapsed time.Duration) string {
		msg := fmt.Sprintf("running for %ds of %ds", int(elapsed.Seconds()), int(limit.Seconds()))
		if line := c.LastLine(); line != "" {
			msg += ": " + line
		}
		return msg
	})
}

// tick sends a progress notification with message(elapsed) every few seconds until stop, and
// none after it, when the client asked for progress.
func (d Deps) tick(p *progress, message func(elapsed time.Duration) string) (stop func()) {
	if !p.enabled() {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(d.heartbeat())
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.send(message(time.Since(start)))
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		p.finish()
	}
}

func timeoutText(a execArgs, r *ExecResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The command did not finish within %d s and was killed (with every process it started). "+
		"Retry with a larger timeout (at most %d), or start it in the background (nohup CMD > out.log 2>&1 &) and poll the log.",
		intArg(a.Timeout, defaultTimeout), maxTimeout)
	if r.Stdout != "" {
		fmt.Fprintf(&b, "\n\nstdout so far (%d characters):\n%s", r.StdoutTotalChars, r.Stdout)
	}
	if r.Stderr != "" {
		fmt.Fprintf(&b, "\n\nstderr so far (%d characters):\n%s", r.StderrTotalChars, r.Stderr)
	}
	return b.String()
}
