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
	head, tail stringText // decoded, for rendering
	// rawHead and rawTail count bytes: each invalid byte is one code point in both, but
	// three bytes once decoded.
	rawHead, rawTail string
}

func newWindowText(w Window) windowText {
	return windowText{w: w, head: newStringText(Decode(w.Head)), tail: newStringText(Decode(w.Tail)),
		rawHead: string(w.Head), rawTail: string(w.Tail)}
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
		shown := prefixBytes(t.rawHead, k/2) + suffixBytes(t.rawHead, k-k/2)
		return s, t.head.n, true, int64(len(t.rawHead) - shown)
	}
	total := t.w.Bytes()
	const overhead = len("\n[... ") + len(" bytes omitted ...]\n")
	for digits := 1; ; digits++ {
		k := max(allowance-overhead-digits, 0)
		nh, nt := min(k/2, t.head.n), min(k-k/2, t.tail.n)
		omitted := total - int64(prefixBytes(t.rawHead, nh)+suffixBytes(t.rawTail, nt))
		if len(strconv.FormatInt(omitted, 10)) <= digits {
			var b strings.Builder
			b.WriteString(t.head.prefix(nh))
			b.WriteString("\n[... ")
			b.WriteString(strconv.FormatInt(omitted, 10))
			b.WriteString(" bytes omitted ...]\n")
			b.WriteString(t.tail.suffix(nt))
			return b.String(), -1, true, omitted
		}
	}
}

// Page renders at most chars code points from the start of b, decoded as Decode does, and
// returns how many bytes of b they took, so a reader can continue exactly after them. A
// multi-byte sequence cut off by b's end is left for the next page unless atEnd says no
// more bytes follow.
func Page(b []byte, chars int, atEnd bool) (string, int) {
	i := 0
	for n := 0; n < chars && i < len(b); n++ {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		if !atEnd && !utf8.FullRune(b[i:]) {
			break
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return Decode(b[:i]), i
}

// PageWindows renders a page of each stream's fetched bytes within budget code points,
// shared as Apply shares it, and returns how many bytes of each the page took. atEnd says
// whether a stream's bytes reach its end (an unfinished sequence there is then shown).
func PageWindows(stdout, stderr []byte, stdoutAtEnd, stderrAtEnd bool, budget int) (so, se string, usedOut, usedErr int) {
	budget = clampBudget(budget)
	ao, ae := allowances(len(stdout), len(stderr), budget)
	so, usedOut = Page(stdout, ao, stdoutAtEnd)
	se, usedErr = Page(stderr, ae, stderrAtEnd)
	return so, se, usedOut, usedErr
}
