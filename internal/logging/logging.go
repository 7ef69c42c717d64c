// Package logging builds the zerolog logger: JSON on stderr by default, a human console format
// when stderr is a terminal. stdout is never used: in stdio mode it belongs to the protocol.
// A log line may also be meant for the MCP clients it concerns (ForClients); which lines, and
// the fields that route them, are this package's; delivering them is internal/serve's.
package logging

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Fields the client mirror (serve.ClientLog) reads from a JSON log line.
const (
	// ClientsField marks a line MCP clients may read (ForClients).
	ClientsField = "to_clients"
	// OwnerField names the sandbox owner a line concerns: it goes to that owner's sessions only.
	OwnerField = "owner"
	// SessionField names the MCP session a line concerns: it goes to that session only.
	SessionField = "session"
)

// ForClients marks e for the MCP clients it concerns: the sessions of its OwnerField or
// SessionField, or every client that asked for log messages when it has neither. Mark only
// lines whose message and fields a client may read: a warning about its own sandbox or about
// the server as a whole, never tokens, headers, env values or command output (the mirror
// redacts what looks like a secret, as a second line of defence, not the first).
func ForClients(e *zerolog.Event) *zerolog.Event { return e.Bool(ClientsField, true) }

// New returns a logger writing to w at level ("debug", "info", "warn", "error") in format
// ("json", "console" or "auto": console when w is a terminal). Each tee also receives every
// line, always as JSON (the console format is for w only).
func New(w io.Writer, level, format string, tee ...zerolog.LevelWriter) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(strings.TrimSpace(level)))
	if err != nil || lvl == zerolog.NoLevel {
		return zerolog.Nop(), fmt.Errorf("log level must be one of debug, info, warn, error, got %q", level)
	}
	switch format {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	case "", "auto":
		if isTerminal(w) {
			w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
		}
	default:
		return zerolog.Nop(), fmt.Errorf("log format must be auto, json or console, got %q", format)
	}
	// Calls, sweeps and the start-up check log from their own goroutines: one line at a time
	// whatever w is (a file, a pipe, a test's buffer).
	out := zerolog.SyncWriter(w)
	if len(tee) > 0 {
		ws := []io.Writer{out}
		for _, t := range tee {
			ws = append(ws, t)
		}
		out = zerolog.MultiLevelWriter(ws...)
	}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger(), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
