package output

import (
	"io"
	"sync"
)

// Capture collects one command's stdout and stderr as they stream, holding
// memory bounded by the budget however much output arrives. Its Result equals
// Apply on the fully decoded streams.
type Capture struct {
	mu          sync.Mutex
	budget      int
	out, errs   stream
	outW, errsW streamWriter
	last        *stream // stream that most recently showed a non-blank line
}

// NewCapture returns a Capture for the given budget, clamped like Apply's.
func NewCapture(budget int) *Capture {
	budget = clampBudget(budget)
	c := &Capture{budget: budget, out: newStream(budget), errs: newStream(budget)}
	c.outW = streamWriter{c: c, s: &c.out}
	c.errsW = streamWriter{c: c, s: &c.errs}
	return c
}

// Stdout returns the writer for standard output. It and Stderr may be used
// from different goroutines at the same time.
func (c *Capture) Stdout() io.Writer { return &c.outW }

// Stderr returns the writer for standard error.
func (c *Capture) Stderr() io.Writer { return &c.errsW }

// Result renders everything written so far, treating an unfinished UTF-8
// sequence as invalid bytes, as it would be at end of output.
func (c *Capture) Result() Result {
	c.mu.Lock()
	out, errs := c.out.view(), c.errs.view()
	c.mu.Unlock()
	return apply(out, errs, c.budget)
}

// TrackLines makes the Capture remember the latest line for LastLine. Call it before the
// first write; without it LastLine is always "" and writes skip the per-byte line scan.
func (c *Capture) TrackLines() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out.lines, c.errs.lines = true, true
}

// LastLine returns the latest non-blank line seen on either stream, trimmed
// and at most 200 code points, or "" if there is none yet (or TrackLines was
// not called). An unterminated line counts, so a progress bar shows its
// current state.
func (c *Capture) LastLine() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		return ""
	}
	return c.last.line.latest()
}

// Bytes returns how many raw bytes each stream has received.
func (c *Capture) Bytes() (stdout, stderr int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.raw, c.errs.raw
}

type streamWriter struct {
	c *Capture
	s *stream
}

// Write never fails: output beyond the budget is counted, not refused, so the
// command is never blocked or killed by a short write.
func (w *streamWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	w.s.line.touched = false
	w.s.write(p)
	if w.s.line.touched {
		w.c.last = w.s
	}
	return len(p), nil
}
