package output

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzBudget maps any fuzzed number into the valid range, favouring small
// budgets so truncation happens on short inputs.
func fuzzBudget(n uint32) int {
	if n%4 == 0 {
		return MinBudget + int(n/4)%(MaxBudget-MinBudget+1)
	}
	return MinBudget + int(n%200)
}

func FuzzApply(f *testing.F) {
	f.Add("hello", "world", uint32(0))
	f.Add(strings.Repeat("x", 300), "", uint32(1))
	f.Add(strings.Repeat("é😀", 90), strings.Repeat("e", 70), uint32(3))
	f.Add(strings.Repeat("a\xff\xe2\x82", 80), "\xed\xa0\x80", uint32(5))
	f.Add(strings.Repeat("\n[... 9 characters omitted ...]\n", 9), strings.Repeat("z", 200), uint32(7))
	f.Fuzz(func(t *testing.T, stdout, stderr string, n uint32) {
		budget := fuzzBudget(n)
		r := Apply(stdout, stderr, budget)
		checkInvariants(t, stdout, stderr, budget, r)
	})
}

func checkInvariants(t *testing.T, stdout, stderr string, budget int, r Result) {
	t.Helper()
	lo, le := utf8.RuneCountInString(stdout), utf8.RuneCountInString(stderr)
	if r.StdoutTotalChars != lo || r.StderrTotalChars != le {
		t.Fatalf("totals = %d, %d; want %d, %d", r.StdoutTotalChars, r.StderrTotalChars, lo, le)
	}
	got := utf8.RuneCountInString(r.Stdout) + utf8.RuneCountInString(r.Stderr)
	switch {
	case lo+le <= budget:
		if r.Stdout != stdout || r.Stderr != stderr || r.StdoutTruncated || r.StderrTruncated {
			t.Fatalf("output within budget %d was changed: %+v", budget, r)
		}
	case got != budget:
		// Whenever something must go, the budget is used to the last code point.
		t.Fatalf("output has %d code points, want exactly the budget %d", got, budget)
	}
	checkShape(t, "stdout", stdout, r.Stdout, r.StdoutTruncated)
	checkShape(t, "stderr", stderr, r.Stderr, r.StderrTruncated)
	if r.StdoutTruncated && r.StderrTruncated {
		if a, b := utf8.RuneCountInString(r.Stdout), utf8.RuneCountInString(r.Stderr); a != budget/2 || b != budget-budget/2 {
			t.Fatalf("both truncated with %d and %d code points, want %d and %d", a, b, budget/2, budget-budget/2)
		}
	}
}

// checkShape verifies that a truncated stream is a prefix and suffix of the
// input around an honest marker, with the extra code point at the end. The
// input may itself contain marker-like text, so any marker may be the one.
func checkShape(t *testing.T, name, in, got string, truncated bool) {
	t.Helper()
	if !truncated {
		if got != in {
			t.Fatalf("%s not truncated but changed: %q -> %q", name, in, got)
		}
		return
	}
	total := utf8.RuneCountInString(in)
	const open, closing = "\n[... ", " characters omitted ...]\n"
	for i := 0; ; i++ {
		at := strings.Index(got[i:], open)
		if at < 0 {
			break
		}
		i += at
		head, rest := got[:i], got[i+len(open):]
		digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
		omitted, err := strconv.Atoi(rest[:digits])
		if err != nil || !strings.HasPrefix(rest[digits:], closing) {
			continue
		}
		tail := rest[digits+len(closing):]
		h, tl := utf8.RuneCountInString(head), utf8.RuneCountInString(tail)
		if strings.HasPrefix(in, head) && strings.HasSuffix(in, tail) &&
			h+tl+omitted == total && omitted > 0 && (tl == h || tl == h+1) {
			return
		}
	}
	t.Fatalf("%s truncated output %q is not head+marker+tail of %d code points", name, got, total)
}

// chunks splits b at random points, often inside multi-byte sequences.
func chunks(b []byte, rng *rand.Rand, maxChunk int) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n := min(1+rng.IntN(maxChunk), len(b))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// feed writes stdout and stderr chunks in an interleaved order.
func feed(c *Capture, stdout, stderr [][]byte, rng *rand.Rand) {
	for len(stdout) > 0 || len(stderr) > 0 {
		if len(stderr) == 0 || (len(stdout) > 0 && rng.IntN(2) == 0) {
			_, _ = c.Stdout().Write(stdout[0])
			stdout = stdout[1:]
			continue
		}
		_, _ = c.Stderr().Write(stderr[0])
		stderr = stderr[1:]
	}
}

func FuzzCapture(f *testing.F) {
	f.Add([]byte("hello\n"), []byte("oops\n"), uint32(0), uint64(1))
	f.Add([]byte(strings.Repeat("é😀ab", 100)), []byte{}, uint32(1), uint64(2))
	f.Add([]byte(strings.Repeat("a\xff\xe2\x82\xf0\x9f\x98", 60)), []byte("\xf0\x9f"), uint32(2), uint64(3))
	f.Add([]byte("\xed\xa0\x80\xc0\xaf\xf4\x90\x80\x80"), []byte(strings.Repeat("ü", 300)), uint32(3), uint64(4))
	f.Fuzz(func(t *testing.T, stdout, stderr []byte, n uint32, seed uint64) {
		budget := fuzzBudget(n)
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		if got, want := Decode(stdout), string([]rune(string(stdout))); got != want {
			t.Fatalf("Decode(%q) = %q, want %q", stdout, got, want)
		}
		c := NewCapture(budget)
		maxChunk := 1 + int(seed%9)
		feed(c, chunks(stdout, rng, maxChunk), chunks(stderr, rng, maxChunk), rng)
		want := Apply(Decode(stdout), Decode(stderr), budget)
		if got := c.Result(); got != want {
			t.Fatalf("Capture.Result() = %+v\nwant Apply = %+v", got, want)
		}
		if o, e := c.Bytes(); o != int64(len(stdout)) || e != int64(len(stderr)) {
			t.Fatalf("Bytes() = %d, %d; want %d, %d", o, e, len(stdout), len(stderr))
		}
	})
}
