// Package conn reaches the daemons inside a sandbox. Four strategies (gateway, direct,
// in-cluster, sandboxd-in-cluster) sit behind one Conn interface and pass one conformance
// suite (conn/conntest). conn knows nothing of MCP or of the Kubernetes client: whatever it
// needs from the cluster (a Gateway address) is handed in through small interfaces.
package conn

import (
	"context"
	"errors"
	"io"
	"time"
)

// Target is where a sandbox lives, as read from its Sandbox object.
type Target struct {
	Namespace   string
	SandboxName string   // Sandbox name (status.sandbox.name of the claim), not the claim name
	PodIPs      []string // Sandbox status.podIPs
	ServiceFQDN string   // Sandbox status.serviceFQDN (empty without a Service)
}

// ExecRequest is one command. Exactly one of Command (shell semantics: /bin/sh -c) or
// Argv (run directly, no shell) is set.
type ExecRequest struct {
	Command string
	Argv    []string
	// Cwd, when set, is the directory the command runs in (relative to the runtime's working
	// directory, or absolute); Env adds variables (names as ValidEnvName). A command whose
	// Cwd does not exist exits with code 126 and says so on stderr.
	Cwd string
	Env map[string]string
	// SaveOutput, when set, is a directory (relative to the runtime's working directory,
	// created) where the command's complete stdout and stderr are also written, as files
	// "stdout" and "stderr", while they stream to the writers.
	SaveOutput string
	Timeout    time.Duration
	// Stdout and Stderr receive output as it arrives (or all at once on runtimes that
	// cannot stream). They must not be nil.
	Stdout io.Writer
	Stderr io.Writer
}

// ExecResult is how a command ended.
type ExecResult struct {
	ExitCode int
}

// Entry is one directory entry. Type is "file" or "directory", or on the python runtime "symlink" for a
// link that leads nowhere; ModTime is POSIX seconds.
type Entry struct {
	Name    string  `json:"name"`
	Size    int64   `json:"size"`
	Type    string  `json:"type"`
	ModTime float64 `json:"mod_time"`
}

// Listing is a directory listing capped at the caller's maximum; Total counts every entry.
type Listing struct {
	Entries []Entry
	Total   int
}

// Conn talks to the runtime inside a sandbox. Implementations are safe for concurrent use.
type Conn interface {
	// Exec runs a command once (never retried). When Timeout passes or ctx is cancelled,
	// the command's whole process group inside the sandbox is killed and ErrTimeout or
	// ctx.Err() is returned (wrapped); output seen so far has been written to the writers.
	Exec(ctx context.Context, t Target, req ExecRequest) (ExecResult, error)
	// Upload streams r into path (parent directories created; an existing file replaced) and
	// returns the bytes written.
	//
	// Without a deadline in ctx, an Upload or Download is cancelled when no byte has moved for
	// 5 minutes, however long it runs (with one, the deadline alone bounds it). r is not read
	// once Upload has returned; an error from r is returned wrapped. A nil r is an empty file.
	Upload(ctx context.Context, t Target, path string, r io.Reader) (int64, error)
	// Download streams the file at path into w and returns the bytes written. A file larger than
	// maxBytes is ErrTooLarge: before any byte is written when its size is known up front
	// (Content-Length), else as soon as the limit is passed.
	//
	// On an error w may hold part of the file (up to maxBytes): callers discard it. A w that
	// is an Expecter is told the size first, when known.
	Download(ctx context.Context, t Target, path string, w io.Writer, maxBytes int64) (int64, error)
	// List reads a directory, keeping at most maxEntries entries in memory.
	List(ctx context.Context, t Target, path string, maxEntries int) (Listing, error)
	// Exists reports whether a file or directory exists; a missing path is (false, nil).
	Exists(ctx context.Context, t Target, path string) (bool, error)
	// Close releases cached connections.
	Close() error
}

// Errors callers translate into advice for the model.
var (
	ErrTimeout     = errors.New("command timed out")
	ErrNotFound    = errors.New("path not found")
	ErrNotDir      = errors.New("path is not a directory")
	ErrIsDir       = errors.New("path is a directory")
	ErrDenied      = errors.New("access denied")
	ErrTooLarge    = errors.New("file too large")
	ErrUnreachable = errors.New("sandbox unreachable")
	ErrNoAddress   = errors.New("sandbox has no address")
)
