// Package logging builds the zerolog logger: JSON on stderr by default, a human console format
// when stderr is a terminal. stdout is never used: in stdio mode it belongs to the protocol.
package logging

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// New returns a logger writing to w at level ("debug", "info", "warn", "error") in format
// ("json", "console" or "auto": console when w is a terminal).
func New(w io.Writer, level, format string) (zerolog.Logger, error) {
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
	return zerolog.New(zerolog.SyncWriter(w)).Level(lvl).With().Timestamp().Logger(), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
