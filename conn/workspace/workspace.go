// Package workspace edits and searches files inside a sandbox where they are: each operation
// is a script run through conn.Conn's Exec, so a file is read by range, edited and searched
// in the sandbox, and only the lines asked for reach the server, whatever the file's size.
package workspace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// Execer is the part of conn.Conn the operations need.
type Execer interface {
	Exec(ctx context.Context, t conn.Target, req conn.ExecRequest) (conn.ExecResult, error)
}

// Errors the tools turn into advice (besides conn.ErrNotFound, conn.ErrIsDir, conn.ErrDenied).
var (
	ErrBinary      = errors.New("the file is binary")
	ErrNoMatch     = errors.New("old_text was not found")
	ErrManyMatches = errors.New("old_text matches more than once")
	ErrBadRegex    = errors.New("the regular expression does not compile")
	ErrExists      = errors.New("the destination exists")
	ErrNotEmpty    = errors.New("the directory is not empty")
	ErrNoPython    = errors.New("editing needs python3 in the sandbox")
	// ErrChanged is an edit that found the file changed by someone else between its read and
	// its write: nothing was written, and the edit can be retried on the new content.
	ErrChanged = errors.New("the file changed while it was being edited (nothing was written); read it again and retry the edit")
)

// MatchError says where old_text matched (or what came close).
type MatchError struct {
	Err   error
	Count int   // matches (ErrManyMatches)
	Lines []int // lines of the first matches, or lines holding old_text's first line (ErrNoMatch)
}

func (e *MatchError) Error() string { return e.Err.Error() }
func (e *MatchError) Unwrap() error { return e.Err }

// FS runs the operations through Exec.
type FS struct {
	Exec    Execer
	Timeout time.Duration // per operation; 0 means the context's deadline, or 60 s without one
}

// maxAnswer bounds what a script may print; each operation asks for far less.
const maxAnswer = 8 << 20

func (f FS) run(ctx context.Context, t conn.Target, script string, args ...string) (string, error) {
	timeout := f.Timeout
	if timeout == 0 {
		timeout = 60 * time.Second
		// The caller's deadline is the operation's timeout: ending the script a moment
		// before it reports a timeout (ErrTimeout) rather than a cancelled context.
		if dl, ok := ctx.Deadline(); ok {
			timeout = max(time.Until(dl)-500*time.Millisecond, time.Second)
		}
	}
	argv := append([]string{"/bin/sh", "-c", encodedScript, "sh", script}, args...)
	o, err := conn.RunScript(ctx, f.Exec.Exec, t, conn.Script{Argv: argv, Timeout: timeout, MaxStdout: maxAnswer})
	if err != nil {
		return "", err
	}
	if o.Cut {
		return "", fmt.Errorf("the sandbox's answer was larger than %d bytes; ask for less (a narrower range or fewer results)", maxAnswer)
	}
	answer, code, ok := decodeAnswer(o.Stdout)
	if o.ExitCode != 0 || !ok || code != 0 {
		return "", o.Failure(max(o.ExitCode, code))
	}
	return answer, nil
}

// encodedScript runs the script ($1) and sends its answer base64-encoded with its exit code
// at the end: file content must arrive byte for byte, and the python runtime decodes output
// as text (CRLF becomes LF, invalid UTF-8 fails the call).
const encodedScript = `s=$1; shift; { /bin/sh -c "$s" sh "$@"; printf '\nEXIT %d\n' $?; } | base64 -w0`

// decodeAnswer undoes encodedScript: the script's output and exit code.
func decodeAnswer(out string) (string, int, bool) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(out))
	if err != nil {
		return "", 0, false
	}
	s := strings.TrimSuffix(string(b), "\n")
	i := strings.LastIndex(s, "\nEXIT ")
	if i < 0 {
		return "", 0, false
	}
	code, err := strconv.Atoi(s[i+len("\nEXIT "):])
	return s[:i], code, err == nil
}

// status splits an answer's first line into its word and the rest of the answer.
func status(out string) (word, detail, rest string) {
	first, rest, _ := strings.Cut(out, "\n")
	word, detail, _ = strings.Cut(first, " ")
	return word, detail, rest
}

// common maps the status words every script may answer.
func common(word, detail, path string) error {
	switch word {
	case "DENIED":
		return fmt.Errorf("%q: %w (it leaves the sandbox's working directory)", path, conn.ErrDenied)
	case "NOTFOUND":
		return fmt.Errorf("%q: %w", path, conn.ErrNotFound)
	case "ISDIR":
		return fmt.Errorf("%q: %w", path, conn.ErrIsDir)
	case "BINARY":
		return fmt.Errorf("%q: %w", path, ErrBinary)
	case "EXISTS":
		return fmt.Errorf("%q: %w", path, ErrExists)
	case "NOTEMPTY":
		return fmt.Errorf("%q: %w", path, ErrNotEmpty)
	case "NOPYTHON":
		return ErrNoPython
	case "CHANGED":
		return fmt.Errorf("%q: %w", path, ErrChanged)
	case "BADREGEX":
		return fmt.Errorf("%w: %s", ErrBadRegex, strings.TrimPrefix(detail, "grep: "))
	}
	return fmt.Errorf("unexpected answer from the sandbox: %.200q", word+" "+detail)
}

// Line is one line of a file; Cut counts the bytes left off its end.
type Line struct {
	N    int
	Text string
	Cut  int
}

// Lines is a range of a file. Next is the first line not shown (0 at the end of the file).
type Lines struct {
	Lines []Line
	Total int
	Next  int
}

// ReadLines returns up to limit lines from line offset (1-based), each cut at lineBytes,
// stopping early once totalBytes of text have been gathered.
func (f FS) ReadLines(ctx context.Context, t conn.Target, path string, offset, limit, lineBytes, totalBytes int) (Lines, error) {
	out, err := f.run(ctx, t, readScript, path, strconv.Itoa(offset), strconv.Itoa(limit), strconv.Itoa(lineBytes), strconv.Itoa(totalBytes))
	if err != nil {
		return Lines{}, fmt.Errorf("reading %q: %w", path, err)
	}
	word, detail, rest := status(out)
	if word != "OK" {
		return Lines{}, common(word, detail, path)
	}
	var r Lines
	sc := bufio.NewScanner(strings.NewReader(rest))
	sc.Buffer(nil, maxAnswer)
	sc.Split(lfLines) // a CR before the LF is part of the line, as edit_file must match it
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "L":
			n, _ := strconv.Atoi(f[1])
			cut, _ := strconv.Atoi(f[2])
			if !sc.Scan() {
				return Lines{}, fmt.Errorf("reading %q: the answer ends inside line %d", path, n)
			}
			r.Lines = append(r.Lines, Line{N: n, Text: sc.Text(), Cut: cut})
		case len(f) == 3 && f[0] == "E":
			r.Total, _ = strconv.Atoi(f[1])
			last, _ := strconv.Atoi(f[2])
			if last > 0 && last < r.Total {
				r.Next = last + 1
			}
			return r, nil
		default:
			return Lines{}, fmt.Errorf("reading %q: unexpected answer %.200q", path, sc.Text())
		}
	}
	return Lines{}, fmt.Errorf("reading %q: the answer has no end", path)
}

// Snippet is an edited region with its context, from line First.
type Snippet struct {
	First int      `json:"first"`
	Lines []string `json:"lines"`
}

// Edit is what an edit changed.
type Edit struct {
	Replacements int       `json:"replacements"`
	Lines        []int     `json:"lines"`
	Snippets     []Snippet `json:"snippets"`
	TotalLines   int       `json:"total_lines"`
}

// EditFile replaces old with new in path: exactly once, or every time with all. The file is
// replaced atomically.
func (f FS) EditFile(ctx context.Context, t conn.Target, path, old, new string, all bool, context int) (Edit, error) {
	flag := "0"
	if all {
		flag = "1"
	}
	out, err := f.run(ctx, t, editScript, path, old, new, flag, strconv.Itoa(context))
	if err != nil {
		return Edit{}, fmt.Errorf("editing %q: %w", path, err)
	}
	word, detail, rest := status(out)
	if word != "JSON" {
		return Edit{}, common(word, detail, path)
	}
	var r struct {
		Edit
		Error string `json:"error"`
		Count int    `json:"count"`
		Near  []int  `json:"near"`
	}
	if err := json.Unmarshal([]byte(rest), &r); err != nil {
		return Edit{}, fmt.Errorf("editing %q: %w", path, err)
	}
	switch r.Error {
	case "":
		return r.Edit, nil
	case "nomatch":
		return Edit{}, &MatchError{Err: ErrNoMatch, Lines: r.Near}
	case "many":
		return Edit{}, &MatchError{Err: ErrManyMatches, Count: r.Count, Lines: r.Lines}
	}
	return Edit{}, common(strings.ToUpper(r.Error), "", path)
}

// Found is a search's answer: results up to the cap and how many there were.
type Found struct {
	Results []string
	Total   int
}

// Search finds lines matching regex (POSIX extended) under dir in files whose name matches
// glob, or with regex "" the files matching glob. Results are cut at resultBytes.
func (f FS) Search(ctx context.Context, t conn.Target, dir, regex, glob string, limit, resultBytes int, ignoreCase bool) (Found, error) {
	ic := "0"
	if ignoreCase {
		ic = "1"
	}
	out, err := f.run(ctx, t, searchScript, dir, regex, glob, strconv.Itoa(limit), strconv.Itoa(resultBytes), ic)
	if err != nil {
		return Found{}, fmt.Errorf("searching %q: %w", dir, err)
	}
	word, detail, rest := status(out)
	if word != "OK" {
		return Found{}, common(word, detail, dir)
	}
	lines := strings.Split(strings.TrimSuffix(rest, "\n"), "\n")
	last := lines[len(lines)-1]
	n, ok := strings.CutPrefix(last, "T ")
	if !ok {
		return Found{}, fmt.Errorf("searching %q: the answer has no total", dir)
	}
	var r Found
	r.Total, _ = strconv.Atoi(n)
	r.Results = lines[:len(lines)-1]
	return r, nil
}

// MakeDir creates a directory and its parents.
func (f FS) MakeDir(ctx context.Context, t conn.Target, path string) error {
	return f.simple(ctx, t, path, mkdirScript, path)
}

// Move renames from to to, creating to's parents; an existing to is replaced only with overwrite.
func (f FS) Move(ctx context.Context, t conn.Target, from, to string, overwrite bool) error {
	err := f.simple(ctx, t, from, moveScript, from, to, flag(overwrite))
	if errors.Is(err, ErrExists) {
		return fmt.Errorf("%q: %w", to, ErrExists)
	}
	return err
}

// Remove deletes a file, link or empty directory; a directory with content only with recursive.
func (f FS) Remove(ctx context.Context, t conn.Target, path string, recursive bool) error {
	return f.simple(ctx, t, path, removeScript, path, flag(recursive))
}

func (f FS) simple(ctx context.Context, t conn.Target, path, script string, args ...string) error {
	out, err := f.run(ctx, t, script, args...)
	if err != nil {
		return err
	}
	word, detail, _ := status(out)
	if word == "OK" {
		return nil
	}
	return common(word, detail, path)
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// lfLines splits on "\n" alone; bufio.ScanLines would drop a "\r" before it.
func lfLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}
