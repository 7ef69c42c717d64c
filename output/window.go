package output

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Window is a stretch of a stream read from storage rather than captured: Head is its start
// and, when the stretch was too long to fetch whole, Tail its end with Gap bytes between them
// that were never read. With Gap 0 and no Tail, Head is the whole stretch.
type Window struct {
	Head, Tail []byte
	Gap        int64
}

// Whole reports whether the window holds its stretch entirely.
func (w Window) Whole() bool { return w.Gap == 0 && len(w.Tail) == 0 }

// Bytes is the stretch's length.
func (w Window) Bytes() int64 { return int64(len(w.Head)+len(w.Tail)) + w.Gap }

// FetchBytes is how many bytes of a stretch's start (and of its end) must be read so that any
// budget's rendering can be made from them: each code point takes at most utf8.UTFMax bytes.
func FetchBytes(budget int) int64 { return int64(utf8.UTFMax * clampBudget(budget)) }

// WindowResult is ApplyWindows' answer: the rendered streams, and for each how many of its
// bytes were left out (for a whole window, its characters are counted as Apply counts them).
type WindowResult struct {
	Result
	StdoutOmittedBytes, StderrOmittedBytes int64
}

// ApplyWindows fits two windows into budget code points with Apply's rules: whole windows
// exactly as Apply renders them. A window with a gap keeps its head and tail around a marker
// that counts bytes ("[... N bytes omitted ...]"), since the gap's characters were never read.
func ApplyWindows(stdout, stderr Window, budget int) WindowResult {
	budget = clampBudget(budget)
	so, se := newWindowText(stdout), newWindowText(stderr)
	ao, ae := allowances(so.estimate(), se.estimate(), budget)
	var r WindowResult
	r.Stdout, r.StdoutTotalChars, r.StdoutTruncated, r.StdoutOmittedBytes = so.fit(ao)
	r.Stderr, r.StderrTotalChars, r.StderrTruncated, r.StderrOmittedBytes = se.fit(ae)
	return r
}

type windowText struct {
	w          Window
	head, tail stringText
}

func newWindowText(w Window) windowText {
	return windowText{w: w, head: newStringText(string(w.Head)), tail: newStringText(string(w.Tail))}
}

// estimate is the stretch's length in code points for sharing the budget; the gap counts a
// code point per byte (an upper bound).
func (t windowText) estimate() int {
	return t.head.n + t.tail.n + int(min(t.w.Gap, int64(MaxBudget)*2))
}

// fit returns the rendering, the total characters (-1 when unknown: the gap was not read),
// whether anything was cut, and how many bytes were.
func (t windowText) fit(allowance int) (string, int, bool, int64) {
	if t.w.Whole() {
		s, cut := fit(t.head, t.head.n, allowance)
		if !cut {
			return s, t.head.n, false, 0
		}
		k := kept(t.head.n, allowance) // as fit cut it
		shown := len(t.head.prefix(k/2)) + len(t.head.suffix(k-k/2))
		return s, t.head.n, true, int64(len(t.w.Head) - shown)
	}
	total := t.w.Bytes()
	const overhead = len("\n[... ") + len(" bytes omitted ...]\n")
	for digits := 1; ; digits++ {
		k := max(allowance-overhead-digits, 0)
		h := t.head.prefix(min(k/2, t.head.n))
		tl := t.tail.suffix(min(k-k/2, t.tail.n))
		omitted := total - int64(len(h)+len(tl))
		if len(strconv.FormatInt(omitted, 10)) <= digits {
			var b strings.Builder
			b.WriteString(h)
			b.WriteString("\n[... ")
			b.WriteString(strconv.FormatInt(omitted, 10))
			b.WriteString(" bytes omitted ...]\n")
			b.WriteString(tl)
			return b.String(), -1, true, omitted
		}
	}
}
