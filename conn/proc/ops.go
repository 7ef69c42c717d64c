package proc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// Start starts a process and returns as soon as it runs; its pid is not part of its handle.
func (r Runner) Start(ctx context.Context, t conn.Target, s Spec) (Info, error) {
	if (s.Command == "") == (len(s.Argv) == 0) {
		return Info{}, errors.New("proc: set exactly one of Command or Argv")
	}
	argv := s.Argv
	if s.Command != "" {
		argv = []string{"/bin/sh", "-c", s.Command}
	}
	if len(s.Env) > 0 {
		if strings.Contains(argv[0], "=") { // env would take the program for an assignment
			argv = append([]string{"/bin/sh", "-c", `exec "$@"`, "sh"}, argv...)
		}
		keys := make([]string, 0, len(s.Env))
		for k := range s.Env {
			if !conn.ValidEnvName(k) {
				return Info{}, fmt.Errorf("proc: %q is not an environment variable name", k)
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		pre := []string{"env"}
		for _, k := range keys {
			pre = append(pre, k+"="+s.Env[k])
		}
		argv = append(pre, argv...)
	}
	id, err := newID()
	if err != nil {
		return Info{}, err
	}
	info := Info{ID: id, Name: s.Name, Command: s.Command, Cwd: s.Cwd, Started: time.Now().UTC().Truncate(time.Second), Running: true}
	if s.Command == "" {
		info.Command, info.Args = s.Argv[0], s.Argv[1:]
	}
	meta, err := json.Marshal(shortened(info))
	if err != nil {
		return Info{}, fmt.Errorf("proc: %w", err)
	}
	args := append([]string{id, strconv.Itoa(SegmentBytes), strconv.FormatInt(r.keep(), 10), s.Cwd,
		base64.StdEncoding.EncodeToString(meta), superviseScript}, argv...)
	out, err := r.script(ctx, t, controlTimeout, startScript, args...)
	if err != nil {
		return Info{}, fmt.Errorf("starting the process: %w", err)
	}
	switch word, rest, _ := strings.Cut(strings.TrimSpace(out), " "); word {
	case "OK":
		return info, nil
	case "EXISTS":
		return Info{}, ErrExists
	case "NOCWD":
		return Info{}, fmt.Errorf("%w: %s", ErrNoCwd, s.Cwd)
	case "MISSING":
		return Info{}, fmt.Errorf("%w: %s", ErrMissingTools, rest)
	}
	return Info{}, fmt.Errorf("proc: unexpected answer from the sandbox: %.200q", out)
}

// maxMetaChars bounds the command and arguments kept for list_processes: the metadata is
// one argument of the start script, and Linux refuses a single argument over 128 KiB.
const maxMetaChars = 2000

// shortened is what the sandbox keeps to describe a process.
func shortened(in Info) Info {
	cut := func(s string, n int) string {
		if r := []rune(s); len(r) > n {
			return string(r[:n]) + "..."
		}
		return s
	}
	in.Command = cut(in.Command, maxMetaChars)
	left := maxMetaChars
	var args []string
	for _, a := range in.Args {
		if left <= 0 {
			args = append(args, "...")
			break
		}
		a = cut(a, left)
		left -= len(a)
		args = append(args, a)
	}
	in.Args = args
	return in
}

// ReadRequest asks for a process's output after what the caller has seen.
type ReadRequest struct {
	ID                       string
	SinceStdout, SinceStderr int64
	// FetchBytes is how much of each stream's new output is fetched from its start and, when
	// there is more, from its end (the caller's budget decides it); never more than that.
	FetchBytes int64
	// Page reads forward from since without jumping to the end: the next call continues
	// where this one stopped.
	Page bool
	// Wait, if positive, holds the call until there is new output or the process ends.
	Wait time.Duration
}

// Stream is one stream's state and what was fetched of it.
type Stream struct {
	First, End int64  // offsets of the oldest byte kept and of the end
	Start      int64  // where the fetched window starts (>= since, >= First)
	Window     Window // the bytes from Start
}

// Window is what was fetched from Start: all of it in Head, or, when there was more than
// twice FetchBytes, Head and Tail with Gap bytes between them never read.
type Window struct {
	Head, Tail []byte
	Gap        int64
}

// Whole reports whether Head holds everything from Start to the end.
func (w Window) Whole() bool { return w.Gap == 0 && len(w.Tail) == 0 }

// Output is what Read found.
type Output struct {
	Running        bool
	ExitCode       *int
	StdinClosed    bool
	Stdout, Stderr Stream
}

// Read returns new output. Memory is bounded by the budget whatever the process printed.
func (r Runner) Read(ctx context.Context, t conn.Target, q ReadRequest) (Output, error) {
	head := max(q.FetchBytes, 1)
	tail := head
	if q.Page {
		tail = 0
	}
	if !ValidID(q.ID) {
		return Output{}, ErrNoProcess
	}
	waitSeconds := int64(q.Wait / time.Second)
	// Base64 of at most a head and a tail per stream, and the state line.
	expect := int(4*(head+tail)/3*2) + 1024
	out, err := r.scriptSized(ctx, t, controlTimeout+q.Wait, expect, readScript, q.ID,
		strconv.FormatInt(max(q.SinceStdout, 0), 10), strconv.FormatInt(max(q.SinceStderr, 0), 10),
		strconv.FormatInt(waitSeconds, 10), strconv.FormatInt(head, 10), strconv.FormatInt(tail, 10))
	if err != nil {
		return Output{}, fmt.Errorf("reading the process's output: %w", err)
	}
	return parseRead(out, q)
}

func parseRead(text string, q ReadRequest) (Output, error) {
	var o Output
	seen := false
	// Lines are slices of text: a megabyte of base64 is not copied to be split.
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		switch {
		case len(f) == 1 && f[0] == "NOPROC":
			return Output{}, ErrNoProcess
		case len(f) == 7 && f[0] == "S":
			n, err := ints(f[3:])
			if err != nil {
				return Output{}, err
			}
			o.Stdout = Stream{First: n[0], End: n[1], Start: max(q.SinceStdout, n[0])}
			o.Stderr = Stream{First: n[2], End: n[3], Start: max(q.SinceStderr, n[2])}
			o.Running, o.StdinClosed = f[1] == "-", f[2] == "1"
			if !o.Running {
				c, err := strconv.Atoi(f[1])
				if err != nil {
					return Output{}, fmt.Errorf("proc: bad exit status %q", f[1])
				}
				o.ExitCode = &c
			}
			seen = true
		case (len(f) == 3 || len(f) == 4) && seen && (f[0] == "H" || f[0] == "T"):
			s := &o.Stdout
			if f[1] == "err" {
				s = &o.Stderr
			}
			start, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				return Output{}, fmt.Errorf("proc: bad offset %q", f[2])
			}
			var data []byte
			if len(f) == 4 {
				data = make([]byte, base64.StdEncoding.DecodedLen(len(f[3])))
				n, err := base64.StdEncoding.Decode(data, []byte(f[3]))
				if err != nil {
					return Output{}, fmt.Errorf("proc: bad output encoding: %w", err)
				}
				data = data[:n]
			}
			if f[0] == "H" {
				s.Start, s.Window.Head = start, data
			} else {
				s.Window.Tail = data
				s.Window.Gap = max(start-(s.Start+int64(len(s.Window.Head))), 0)
			}
		default:
			return Output{}, fmt.Errorf("proc: unexpected answer from the sandbox: %.200q", line)
		}
	}
	if !seen {
		return Output{}, fmt.Errorf("proc: the sandbox gave no state: %.200q", text)
	}
	return o, nil
}

func ints(f []string) ([]int64, error) {
	out := make([]int64, len(f))
	for i, s := range f {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("proc: bad number %q", s)
		}
		out[i] = n
	}
	return out, nil
}

// Write sends data to the process's stdin and, with closeIn, closes it afterwards.
func (r Runner) Write(ctx context.Context, t conn.Target, id string, data []byte, closeIn bool) error {
	if len(data) > MaxStdinBytes {
		return fmt.Errorf("proc: %d bytes of input; at most %d per write", len(data), MaxStdinBytes)
	}
	if !ValidID(id) {
		return ErrNoProcess
	}
	c := "0"
	if closeIn {
		c = "1"
	}
	out, err := r.script(ctx, t, controlTimeout, writeScript, id, base64.StdEncoding.EncodeToString(data), c)
	if err != nil {
		return fmt.Errorf("writing to the process: %w", err)
	}
	return controlAnswer(out)
}

// Signals that may be sent to a process group.
var Signals = []string{"INT", "TERM", "KILL", "HUP"}

// Signal sends sig (one of Signals) to the process's whole process group.
func (r Runner) Signal(ctx context.Context, t conn.Target, id, sig string) error {
	if !ValidID(id) {
		return ErrNoProcess
	}
	if !slices.Contains(Signals, sig) {
		return fmt.Errorf("proc: signal %q is not one of %s", sig, strings.Join(Signals, ", "))
	}
	out, err := r.script(ctx, t, controlTimeout, signalScript, id, sig)
	if err != nil {
		return fmt.Errorf("signalling the process: %w", err)
	}
	return controlAnswer(out)
}

// controlAnswer turns a write or signal script's answer into an error.
func controlAnswer(out string) error {
	word, rest, _ := strings.Cut(strings.TrimSpace(out), " ")
	switch word {
	case "OK":
		return nil
	case "NOPROC":
		return ErrNoProcess
	case "ENDED":
		return &EndedError{ExitCode: rest}
	case "CLOSED":
		return ErrStdinClosed
	case "BLOCKED":
		return ErrStdinBlocked
	}
	return fmt.Errorf("proc: unexpected answer from the sandbox: %.200q", out)
}

// EndedError is ErrEnded with the exit status.
type EndedError struct{ ExitCode string }

func (e *EndedError) Error() string { return fmt.Sprintf("%v with exit code %s", ErrEnded, e.ExitCode) }
func (e *EndedError) Unwrap() error { return ErrEnded }

// List returns every process started in the sandbox, oldest first.
func (r Runner) List(ctx context.Context, t conn.Target) ([]Info, error) {
	out, err := r.script(ctx, t, controlTimeout, listScript)
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	var list []Info
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) != 5 || f[0] != "P" {
			return nil, fmt.Errorf("proc: unexpected answer from the sandbox: %.200q", line)
		}
		raw, err := base64.StdEncoding.DecodeString(f[4])
		if err != nil {
			continue // a directory being created: its meta is not written yet
		}
		var in Info
		if err := json.Unmarshal(raw, &in); err != nil {
			continue
		}
		in.ID, in.Running, in.StdinClosed = f[1], f[2] == "-", f[3] == "1"
		if c, err := strconv.Atoi(f[2]); err == nil {
			in.ExitCode = &c
		}
		list = append(list, in)
	}
	slices.SortStableFunc(list, func(a, b Info) int { return a.Started.Compare(b.Started) })
	return list, nil
}
