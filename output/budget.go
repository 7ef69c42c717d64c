package output

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of max_output_chars, the combined stdout/stderr budget in code points.
const (
	MinBudget     = 128
	MaxBudget     = 300000
	DefaultBudget = 30000
)

// markerOverhead is the marker's length without its count: "\n[... " plus
// " characters omitted ...]\n". All of it is ASCII, so bytes equal code points.
const markerOverhead = len("\n[... ") + len(" characters omitted ...]\n")

// Result is the budgeted output of one command. Totals describe the output
// before truncation, in code points.
type Result struct {
	Stdout, Stderr                     string
	StdoutTotalChars, StderrTotalChars int
	StdoutTruncated, StderrTruncated   bool
}

// Apply fits stdout and stderr into budget code points. The budget should
// already be validated; out-of-range values are clamped so the result still
// leaves room for a marker in both streams.
func Apply(stdout, stderr string, budget int) Result {
	return apply(newStringText(stdout), newStringText(stderr), budget)
}

// text is a stream whose code points can be excerpted without holding it all,
// so Apply and Capture share one implementation of the budget rules.
type text interface {
	runeLen() int
	// prefix and suffix are only asked for at most the budget's code points,
	// and at most runeLen of them.
	prefix(n int) string
	suffix(n int) string
}

func apply(stdout, stderr text, budget int) Result {
	budget = clampBudget(budget)
	lo, le := stdout.runeLen(), stderr.runeLen()
	ao, ae := allowances(lo, le, budget)
	r := Result{StdoutTotalChars: lo, StderrTotalChars: le}
	r.Stdout, r.StdoutTruncated = fit(stdout, lo, ao)
	r.Stderr, r.StderrTruncated = fit(stderr, le, ae)
	return r
}

func clampBudget(budget int) int {
	return min(max(budget, MinBudget), MaxBudget)
}

// allowances splits the budget: stdout gets the floor half and stderr the
// ceiling half, unless one stream needs less than its half, in which case the
// other may use everything that stream leaves.
func allowances(lo, le, budget int) (stdout, stderr int) {
	if lo+le <= budget {
		return lo, le
	}
	stdout, stderr = budget/2, budget-budget/2
	switch {
	case lo < stdout:
		stderr = budget - lo
	case le < stderr:
		stdout = budget - le
	}
	return stdout, stderr
}

// fit renders a stream of n code points within allowance code points.
func fit(t text, n, allowance int) (string, bool) {
	if n <= allowance {
		return t.prefix(n), false
	}
	k := kept(n, allowance)
	head := k / 2
	tail := k - head
	var b strings.Builder
	h, tl := t.prefix(head), t.suffix(tail)
	b.Grow(len(h) + markerOverhead + 20 + len(tl))
	b.WriteString(h)
	b.WriteString("\n[... ")
	b.WriteString(strconv.Itoa(n - k))
	b.WriteString(" characters omitted ...]\n")
	b.WriteString(tl)
	return b.String(), true
}

// kept returns how many code points of an n-long stream survive when the
// excerpts plus marker must fill exactly allowance code points. The marker's
// length depends on the omitted count's digits, which depend on the marker's
// length, so the digit count is iterated to a fixed point. Starting low finds
// the smallest consistent marker (at 99/100 both fit), keeping the most text.
func kept(n, allowance int) int {
	digits := 1
	for {
		k := allowance - markerOverhead - digits
		d := decimalDigits(n - k)
		if d <= digits {
			return max(k, 0)
		}
		digits = d
	}
}

func decimalDigits(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}

// stringText excerpts an in-memory string; invalid UTF-8 bytes count as one
// code point each, as a decoder would turn each into U+FFFD.
type stringText struct {
	s string
	n int
}

func newStringText(s string) stringText {
	return stringText{s: s, n: utf8.RuneCountInString(s)}
}

func (t stringText) runeLen() int { return t.n }
func (t stringText) prefix(n int) string {
	if n >= t.n {
		return t.s
	}
	return t.s[:prefixBytes(t.s, n)]
}
func (t stringText) suffix(n int) string { return t.s[len(t.s)-suffixBytes(t.s, n):] }

// prefixBytes returns the byte length of the first n code points of s.
func prefixBytes(s string, n int) int {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}

// suffixBytes returns the byte length of the last n code points of s. Backward
// decoding splits invalid bytes exactly as forward decoding does, so prefix and
// suffix counts agree with utf8.RuneCountInString.
func suffixBytes(s string, n int) int {
	j := len(s)
	for ; n > 0 && j > 0; n-- {
		if s[j-1] < utf8.RuneSelf {
			j--
			continue
		}
		_, size := utf8.DecodeLastRuneInString(s[:j])
		j -= size
	}
	return len(s) - j
}
