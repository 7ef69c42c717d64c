package conn

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// LimitedBuffer keeps the first Max bytes written and notes in Cut that more came; writes
// never fail, so a chatty command is not killed by its own output.
type LimitedBuffer struct {
	strings.Builder
	Max int
	Cut bool
}

func (b *LimitedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.Max - b.Len(); len(p) > room {
		b.Cut = true
		p = p[:max(room, 0)]
	}
	b.Builder.Write(p)
	return n, nil
}

// Script is one helper script the server runs in a sandbox (process state, file tools): argv
// with stdout kept up to MaxStdout bytes and the first 64 KiB of stderr for the error.
type Script struct {
	Argv      []string
	Timeout   time.Duration
	MaxStdout int
	// Expect is room made up front for an answer of about that size, so a large answer is
	// not copied through ever larger buffers.
	Expect int
}

// ScriptOutput is what a Script left.
type ScriptOutput struct {
	Stdout   string
	Cut      bool // stdout passed MaxStdout
	ExitCode int
	stderr   string
}

// RunScript runs s through exec (a Conn's Exec).
func RunScript(ctx context.Context, exec func(context.Context, Target, ExecRequest) (ExecResult, error), t Target, s Script) (ScriptOutput, error) {
	out, errb := LimitedBuffer{Max: s.MaxStdout}, LimitedBuffer{Max: 64 << 10}
	out.Grow(s.Expect)
	res, err := exec(ctx, t, ExecRequest{Argv: s.Argv, Timeout: s.Timeout, Stdout: &out, Stderr: &errb})
	if err != nil {
		return ScriptOutput{}, err
	}
	return ScriptOutput{Stdout: out.String(), Cut: out.Cut, ExitCode: res.ExitCode, stderr: errb.String()}, nil
}

// Failure is the error of a script that failed with code: its error output, or the code.
func (o ScriptOutput) Failure(code int) error {
	msg := strings.TrimSpace(o.stderr)
	if msg == "" {
		msg = "no error output"
	}
	return fmt.Errorf("the sandbox's shell failed (exit code %d): %s", code, msg)
}
