// Package proc runs long-lived processes inside a sandbox with handles that are plain values:
// a process is a directory of files in the sandbox (see scripts.go), reached through nothing
// but conn.Conn's Exec, so any server process, replica or restart can read, feed, signal and
// list it, on every runtime and connection type. Nothing is held in server memory.
package proc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// Execer is the part of conn.Conn the runner needs.
type Execer interface {
	Exec(ctx context.Context, t conn.Target, req conn.ExecRequest) (conn.ExecResult, error)
}

// Defaults for Runner's zero fields.
const (
	// DefaultRoot is where process state lives in the sandbox: TMPDIR is read there.
	DefaultRoot = "${TMPDIR:-/tmp}/.k8s-sandbox-mcp/procs"
	// DefaultMaxOutputBytes is how much of each stream is kept; older output is dropped.
	DefaultMaxOutputBytes = 64 << 20
	// SegmentBytes is the unit output is kept and dropped in.
	SegmentBytes = 1 << 20
	// MinMaxOutputBytes keeps at least two segments, so the one being written is never dropped.
	MinMaxOutputBytes = 2 * SegmentBytes
	// MaxStdinBytes bounds one write: a pipe holds 64 KiB, so a process not reading its
	// input blocks a larger write.
	MaxStdinBytes = 64 << 10
	// controlTimeout bounds a script that only inspects or changes files.
	controlTimeout = 30 * time.Second
	// maxControlOutput bounds what a control script may print before it is cut off.
	maxControlOutput = 4 << 20
)

// Errors the tools turn into advice.
var (
	ErrNoProcess    = errors.New("no such process")
	ErrEnded        = errors.New("the process has ended")
	ErrStdinClosed  = errors.New("the process's stdin is closed")
	ErrStdinBlocked = errors.New("the process did not read its input")
	ErrExists       = errors.New("a process with that id exists")
	ErrNoCwd        = errors.New("working directory not found")
	ErrMissingTools = errors.New("the sandbox lacks tools processes need")
)

// Runner starts and reaches processes in sandboxes.
type Runner struct {
	Exec Execer
	// Root is the state directory in the sandbox; "" means DefaultRoot. It may use ${VAR}
	// expansions, which the sandbox's shell resolves inside double quotes, so it must hold no
	// quote, backquote, backslash or newline: it is set in code, never from input.
	Root string
	// MaxOutputBytes is kept per stream (rounded down to whole segments, at least
	// MinMaxOutputBytes); 0 means DefaultMaxOutputBytes.
	MaxOutputBytes int64
}

// Spec is what to start: Command through /bin/sh -c, or Argv directly.
type Spec struct {
	Command string
	Argv    []string
	Cwd     string
	Env     map[string]string
	Name    string
}

// Info describes one process.
type Info struct {
	ID          string    `json:"id"`
	Name        string    `json:"name,omitempty"`
	Command     string    `json:"command"`
	Args        []string  `json:"args,omitempty"`
	Cwd         string    `json:"cwd,omitempty"`
	Started     time.Time `json:"started"`
	Running     bool      `json:"-"`
	ExitCode    *int      `json:"-"`
	StdinClosed bool      `json:"-"`
}

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidID reports whether id can name a process (and so a directory).
func ValidID(id string) bool { return idPattern.MatchString(id) }

func newID() (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("proc: generating an id: %w", err)
	}
	return "p" + hex.EncodeToString(b[:]), nil
}

func (r Runner) root() string {
	if r.Root == "" {
		return DefaultRoot
	}
	return r.Root
}

// keep is how many segments of each stream are kept.
func (r Runner) keep() int64 {
	m := r.MaxOutputBytes
	if m == 0 {
		m = DefaultMaxOutputBytes
	}
	return max(m, MinMaxOutputBytes) / SegmentBytes
}

// script runs one control script; its first argument (the root) is expanded by the shell.
func (r Runner) script(ctx context.Context, t conn.Target, timeout time.Duration, body string, args ...string) (string, error) {
	return r.scriptSized(ctx, t, timeout, 0, body, args...)
}

// scriptSized is script with room for an answer of about expect bytes made up front, so a
// large answer is not copied through ever larger buffers.
func (r Runner) scriptSized(ctx context.Context, t conn.Target, timeout time.Duration, expect int, body string, args ...string) (string, error) {
	// The root may hold ${...}: a wrapper expands it and hands it to the script as $0.
	argv := append([]string{"/bin/sh", "-c", `r="` + r.root() + `"; s=$1; shift; exec /bin/sh -c "$s" "$r" "$@"`, "sh", body}, args...)
	// A read's answer is as large as its windows: the cap follows the size asked for.
	limit := max(maxControlOutput, expect+64<<10)
	o, err := conn.RunScript(ctx, r.Exec.Exec, t, conn.Script{Argv: argv, Timeout: timeout, MaxStdout: limit, Expect: expect})
	switch {
	case err != nil:
		return "", err
	case o.Cut:
		return "", fmt.Errorf("proc: the sandbox answered with more than %d bytes", limit)
	case o.ExitCode != 0:
		return "", fmt.Errorf("proc: %w", o.Failure(o.ExitCode))
	}
	return o.Stdout, nil
}
