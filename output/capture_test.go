package output

import (
	"bytes"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "empty", in: "", want: ""},
		{name: "valid", in: "héllo 😀", want: "héllo 😀"},
		{name: "stray continuation", in: "a\x80b", want: "a\uFFFDb"},
		{name: "truncated three-byte", in: "a\xe2\x82", want: "a\uFFFD\uFFFD"},
		{name: "truncated then ascii", in: "\xe2\x82a", want: "\uFFFD\uFFFDa"},
		{name: "surrogate", in: "\xed\xa0\x80", want: "\uFFFD\uFFFD\uFFFD"},
		{name: "overlong", in: "\xc0\xaf", want: "\uFFFD\uFFFD"},
		{name: "beyond U+10FFFF", in: "\xf4\x90\x80\x80", want: "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{name: "literal replacement kept", in: "\uFFFD", want: "\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decode([]byte(tt.in)); got != tt.want {
				t.Errorf("Decode(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got := string([]rune(tt.in)); got != tt.want {
				t.Errorf("table disagrees with []rune conversion: %q", got)
			}
		})
	}
}

// captureInputs mixes valid, multi-byte and invalid UTF-8, long enough to be
// truncated at small budgets and short enough to pass through.
func captureInputs() map[string]string {
	return map[string]string{
		"empty":           "",
		"short":           "ok\n",
		"ascii":           pattern(1000),
		"multi-byte":      pattern(700, "é", "😀", "a", "中"),
		"invalid mix":     strings.Repeat("a\xff\xe2\x82b\xf0\x9f\x98c\xed\xa0\x80\xc0\xaf", 40),
		"ends incomplete": pattern(300, "ü") + "\xf0\x9f\x98",
		"only incomplete": "\xe2\x82",
		"many pending":    pattern(127, "x") + "\xf0\x9f",
	}
}

func TestCaptureMatchesApplyForAnyChunking(t *testing.T) {
	inputs := captureInputs()
	for outName, stdout := range inputs {
		for errName, stderr := range inputs {
			for _, budget := range []int{MinBudget, 129, 250, 2000} {
				for _, maxChunk := range []int{1, 2, 3, 5, 64, 1 << 20} {
					rng := rand.New(rand.NewPCG(uint64(budget), uint64(maxChunk)))
					c := NewCapture(budget)
					feed(c, chunks([]byte(stdout), rng, maxChunk), chunks([]byte(stderr), rng, maxChunk), rng)
					want := Apply(Decode([]byte(stdout)), Decode([]byte(stderr)), budget)
					if got := c.Result(); got != want {
						t.Fatalf("%s/%s budget %d chunks ≤%d:\n got %+v\nwant %+v", outName, errName, budget, maxChunk, got, want)
					}
				}
			}
		}
	}
}

func TestCaptureEverySplitPoint(t *testing.T) {
	in := []byte("é😀\xff\xe2\x82z中\xf0\x9f\x98" + pattern(90, "ab", "ü"))
	for _, budget := range []int{MinBudget, 1000} {
		want := Apply(Decode(in), "", budget)
		if want.StdoutTruncated != (budget == MinBudget) {
			t.Fatalf("input should be truncated only at the minimum budget, got %+v", want)
		}
		for i := 0; i <= len(in); i++ {
			for j := i; j <= len(in); j++ {
				c := NewCapture(budget)
				for _, part := range [][]byte{in[:i], in[i:j], in[j:]} {
					_, _ = c.Stdout().Write(part)
				}
				if got := c.Result(); got != want {
					t.Fatalf("budget %d split at %d,%d:\n got %+v\nwant %+v", budget, i, j, got, want)
				}
			}
		}
	}
}

func TestCaptureResultDoesNotConsumePending(t *testing.T) {
	c := NewCapture(MinBudget)
	_, _ = c.Stdout().Write([]byte("a\xf0\x9f"))
	if got, want := c.Result().Stdout, "a\uFFFD\uFFFD"; got != want {
		t.Fatalf("mid-sequence Result().Stdout = %q, want %q", got, want)
	}
	_, _ = c.Stdout().Write([]byte("\x98\x80"))
	if got, want := c.Result().Stdout, "a😀"; got != want {
		t.Fatalf("completed Result().Stdout = %q, want %q", got, want)
	}
}

// mixedChunk is 32 KiB of text with multi-byte runes, an invalid byte and
// newlines, sized so its runes straddle chunk boundaries.
func mixedChunk() []byte {
	b := []byte(pattern(32<<10, "line ", "é😀", "\n", "x\xff"))
	return b[:32<<10]
}

func TestCaptureMemoryBounded(t *testing.T) {
	const budget = DefaultBudget
	chunk := mixedChunk()
	c := NewCapture(budget)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const total = 50 << 20
	for written := 0; written < total; written += len(chunk) {
		_, _ = c.Stdout().Write(chunk)
		_, _ = c.Stderr().Write(chunk)
	}
	runtime.ReadMemStats(&after)

	// Per stream: head and tail of at most UTFMax bytes per budgeted code
	// point, each grown geometrically (at most twice its final size in all),
	// plus the decode scratch and line buffers.
	limit := uint64(2 * (2*2*utf8.UTFMax*budget + 2*scratchFlush + 4*maxLineBytes))
	if grew := after.TotalAlloc - before.TotalAlloc; grew > limit {
		t.Errorf("allocated %d bytes while capturing 100 MB, want at most %d", grew, limit)
	}
	for name, s := range map[string]*stream{"stdout": &c.out, "stderr": &c.errs} {
		if cap(s.head) > utf8.UTFMax*budget || cap(s.tail.buf) > utf8.UTFMax*budget {
			t.Errorf("%s retains head %d and tail %d bytes, want at most %d each", name, cap(s.head), cap(s.tail.buf), utf8.UTFMax*budget)
		}
	}
	allocs := testing.AllocsPerRun(100, func() { _, _ = c.Stdout().Write(chunk) })
	if allocs != 0 {
		t.Errorf("steady-state Write allocates %v times, want 0", allocs)
	}
	r := c.Result()
	if o, _ := c.Bytes(); o < total {
		t.Errorf("Bytes() stdout = %d, want at least %d", o, total)
	}
	if !r.StdoutTruncated || utf8.RuneCountInString(r.Stdout)+utf8.RuneCountInString(r.Stderr) != budget {
		t.Errorf("result of 100 MB does not fill the budget: %d + %d code points", len(r.Stdout), len(r.Stderr))
	}
}

func TestCaptureConcurrentWriters(t *testing.T) {
	stdout := bytes.Repeat([]byte("out é😀 line\n"), 5000)
	stderr := bytes.Repeat([]byte("err \xff ü\n"), 5000)
	c := NewCapture(1000)
	c.TrackLines()
	var wg sync.WaitGroup
	for _, job := range []struct {
		w    io.Writer
		data []byte
	}{
		{w: c.Stdout(), data: stdout},
		{w: c.Stderr(), data: stderr},
	} {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(len(job.data)), 1))
			for _, part := range chunks(job.data, rng, 37) {
				_, _ = job.w.Write(part)
				_ = c.LastLine()
			}
		})
	}
	wg.Wait()
	if got, want := c.Result(), Apply(Decode(stdout), Decode(stderr), 1000); got != want {
		t.Fatalf("concurrent capture:\n got %+v\nwant %+v", got, want)
	}
}
