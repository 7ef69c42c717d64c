package output

import (
	"fmt"
	"strings"
	"testing"
)

// excerpt describes an expected truncation by hand-computed counts; nil means
// the stream must come back unchanged.
type excerpt struct{ head, omitted, tail int }

// pattern returns n code points cycling through units, so excerpts taken from
// the wrong place are detectable.
func pattern(n int, units ...string) string {
	if len(units) == 0 {
		units = []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c"}
	}
	var b strings.Builder
	for i := range n {
		b.WriteString(units[i%len(units)])
	}
	return b.String()
}

// runePrefix and runeSuffix count invalid bytes as one code point, like the
// range loop over a string does.
func runePrefix(s string, n int) string {
	seen := 0
	for i := range s {
		if seen == n {
			return s[:i]
		}
		seen++
	}
	return s
}

func runeSuffix(s string, n int) string {
	skip := len([]rune(s)) - n
	for i := range s {
		if skip <= 0 {
			return s[i:]
		}
		skip--
	}
	return ""
}

func expected(in string, e *excerpt) string {
	if e == nil {
		return in
	}
	return runePrefix(in, e.head) +
		fmt.Sprintf("\n[... %d characters omitted ...]\n", e.omitted) +
		runeSuffix(in, e.tail)
}

func TestApply(t *testing.T) {
	const tenM = 10_000_000
	tests := []struct {
		name           string
		stdout, stderr string
		budget         int
		wantOut        *excerpt
		wantErr        *excerpt
	}{
		{name: "short output unchanged", stdout: "hello\n", stderr: "warn\n", budget: 128},
		{name: "both empty", budget: 128},
		{name: "exactly at budget split evenly", stdout: pattern(64), stderr: pattern(64), budget: 128},
		{name: "exactly at budget in stdout", stdout: pattern(128), budget: 128},
		{name: "exactly at budget in stderr", stderr: pattern(128), budget: 128},
		{name: "uneven but within budget", stdout: pattern(120), stderr: pattern(8), budget: 128},
		{
			// 200 code points into 128: N=106 needs a 3-digit marker (31+3), leaving 94 = 47+47.
			name: "stdout oversized, stderr empty gets all", stdout: pattern(200), budget: 128,
			wantOut: &excerpt{head: 47, omitted: 106, tail: 47},
		},
		{
			name: "stderr oversized, stdout empty gets all", stderr: pattern(200), budget: 128,
			wantErr: &excerpt{head: 47, omitted: 106, tail: 47},
		},
		{
			// stderr needs 10 of its 64, so stdout may use 118.
			name: "short stderr donates to stdout", stdout: pattern(500), stderr: pattern(10), budget: 128,
			wantOut: &excerpt{head: 42, omitted: 416, tail: 42},
		},
		{
			name: "short stdout donates to stderr", stdout: pattern(10), stderr: pattern(500), budget: 128,
			wantErr: &excerpt{head: 42, omitted: 416, tail: 42},
		},
		{
			// stdout uses exactly its share, so nothing is donated.
			name: "stdout exactly its share", stdout: pattern(64), stderr: pattern(100), budget: 128,
			wantErr: &excerpt{head: 15, omitted: 69, tail: 16},
		},
		{
			// Dropping one character still costs a whole marker.
			name: "one over budget", stdout: pattern(64), stderr: pattern(65), budget: 128,
			wantErr: &excerpt{head: 15, omitted: 34, tail: 16},
		},
		{
			name: "both oversized", stdout: pattern(1000), stderr: pattern(1000), budget: 128,
			wantOut: &excerpt{head: 15, omitted: 970, tail: 15},
			wantErr: &excerpt{head: 15, omitted: 970, tail: 15},
		},
		{
			// stderr gets the odd character: 64 and 65.
			name: "odd budget", stdout: pattern(1000), stderr: pattern(1000), budget: 129,
			wantOut: &excerpt{head: 15, omitted: 970, tail: 15},
			wantErr: &excerpt{head: 15, omitted: 969, tail: 16},
		},
		{
			name: "marker below 99", stdout: pattern(193), budget: 128,
			wantOut: &excerpt{head: 47, omitted: 98, tail: 48},
		},
		{
			// 99 (2 digits) and 100 (3 digits) both fill exactly; the shorter marker keeps more.
			name: "marker at 99 of 99/100", stdout: pattern(194), budget: 128,
			wantOut: &excerpt{head: 47, omitted: 99, tail: 48},
		},
		{
			name: "marker past 100", stdout: pattern(195), budget: 128,
			wantOut: &excerpt{head: 47, omitted: 101, tail: 47},
		},
		{
			name: "marker at 999", stdout: pattern(1093), budget: 128,
			wantOut: &excerpt{head: 47, omitted: 999, tail: 47},
		},
		{
			name: "marker past 1000", stdout: pattern(1094), budget: 128,
			wantOut: &excerpt{head: 46, omitted: 1001, tail: 47},
		},
		{
			name: "two-byte code points", stdout: pattern(200, "é", "ü", "ß"), budget: 128,
			wantOut: &excerpt{head: 47, omitted: 106, tail: 47},
		},
		{
			name: "emoji code points", stdout: pattern(200, "😀", "🚀", "a"), stderr: pattern(20, "é"), budget: 128,
			wantOut: &excerpt{head: 37, omitted: 126, tail: 37},
		},
		{
			name: "emoji within budget unchanged", stdout: pattern(100, "😀"), stderr: pattern(28, "é"), budget: 128,
		},
		{
			// Invalid bytes count as one code point each and are kept as is.
			name: "invalid bytes", stdout: strings.Repeat("a\xff", 100), budget: 128,
			wantOut: &excerpt{head: 47, omitted: 106, tail: 47},
		},
		{
			name: "minimum budget with huge outputs", stdout: pattern(tenM), stderr: pattern(tenM, "é", "x"), budget: MinBudget,
			wantOut: &excerpt{head: 13, omitted: 9999974, tail: 13},
			wantErr: &excerpt{head: 13, omitted: 9999974, tail: 13},
		},
		{
			name: "maximum budget", stdout: pattern(400000), stderr: pattern(400000), budget: MaxBudget,
			wantOut: &excerpt{head: 74981, omitted: 250037, tail: 74982},
			wantErr: &excerpt{head: 74981, omitted: 250037, tail: 74982},
		},
		{
			name: "budget below minimum is clamped", stdout: pattern(200), budget: 10,
			wantOut: &excerpt{head: 47, omitted: 106, tail: 47},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Apply(tt.stdout, tt.stderr, tt.budget)
			checkStream(t, "stdout", got.Stdout, got.StdoutTruncated, got.StdoutTotalChars, tt.stdout, tt.wantOut)
			checkStream(t, "stderr", got.Stderr, got.StderrTruncated, got.StderrTotalChars, tt.stderr, tt.wantErr)
		})
	}
}

func checkStream(t *testing.T, name, got string, truncated bool, total int, in string, want *excerpt) {
	t.Helper()
	if w := expected(in, want); got != w {
		t.Errorf("%s = %q, want %q", name, clip(got), clip(w))
	}
	if truncated != (want != nil) {
		t.Errorf("%s truncated = %v, want %v", name, truncated, want != nil)
	}
	if n := len([]rune(in)); total != n {
		t.Errorf("%s total = %d, want %d", name, total, n)
	}
}

// clip keeps failure messages readable for huge strings.
func clip(s string) string {
	if len(s) > 400 {
		return s[:200] + "…" + s[len(s)-200:]
	}
	return s
}

func TestKeptFillsAllowanceExactly(t *testing.T) {
	for allowance := 64; allowance <= 300; allowance++ {
		for n := allowance + 1; n <= allowance+12000; n += 7 {
			k := kept(n, allowance)
			marker := fmt.Sprintf("\n[... %d characters omitted ...]\n", n-k)
			if k+len(marker) != allowance {
				t.Fatalf("kept(%d, %d) = %d: %d + marker %d != allowance", n, allowance, k, k, len(marker))
			}
		}
	}
}
