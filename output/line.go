package output

import (
	"bytes"
	"strings"
	"unicode"
)

const (
	// maxLineRunes caps LastLine so heartbeats stay short.
	maxLineRunes = 200
	// maxLineBytes holds maxLineRunes code points of any width.
	maxLineBytes = 4 * maxLineRunes
)

// lineTracker remembers the latest non-blank line of one stream. Both '\n'
// and '\r' end a line, so progress bars redrawn with '\r' report their latest
// state. Only the start of a long line is kept.
type lineTracker struct {
	cur     []byte // unterminated line, leading space dropped, capped
	last    []byte // latest completed non-blank line, capped
	touched bool   // set when the latest write showed non-blank text
}

func (t *lineTracker) feed(b []byte) {
	i := lastTerminator(b)
	if i < 0 {
		t.appendCur(b)
		t.touched = t.touched || !isBlank(t.cur)
		return
	}
	for end := i; ; {
		start := lastTerminator(b[:end]) + 1
		if start == 0 {
			t.appendCur(b[:end])
			if !isBlank(t.cur) {
				t.last = append(t.last[:0], t.cur...)
				t.touched = true
			}
			break
		}
		if seg := b[start:end]; !isBlank(seg) {
			seg = bytes.TrimLeftFunc(seg, unicode.IsSpace)
			t.last = append(t.last[:0], seg[:min(len(seg), maxLineBytes)]...)
			t.touched = true
			break
		}
		end = start - 1
	}
	t.cur = t.cur[:0]
	t.appendCur(b[i+1:])
	t.touched = t.touched || !isBlank(t.cur)
}

func (t *lineTracker) appendCur(b []byte) {
	if len(t.cur) == 0 {
		b = bytes.TrimLeftFunc(b, unicode.IsSpace)
	}
	room := maxLineBytes - len(t.cur)
	t.cur = append(t.cur, b[:min(len(b), room)]...)
}

// latest returns the unterminated line if it has text, else the last
// completed one, trimmed and capped at maxLineRunes code points.
func (t *lineTracker) latest() string {
	line := t.cur
	if isBlank(line) {
		line = t.last
	}
	s := string(line)
	return strings.TrimSpace(s[:prefixBytes(s, maxLineRunes)])
}

func lastTerminator(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' || b[i] == '\r' {
			return i
		}
	}
	return -1
}

func isBlank(b []byte) bool {
	return len(bytes.TrimSpace(b)) == 0
}
