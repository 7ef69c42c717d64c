package output

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestApplyWindowsWholeEqualsApply(t *testing.T) {
	for _, tc := range []struct {
		name        string
		out, errOut string
		budget      int
	}{
		{"fits", "hello\n", "warn\n", 1000},
		{"stdout cut", strings.Repeat("a", 5000), "e", 200},
		{"both cut, multibyte", strings.Repeat("é", 3000), strings.Repeat("日", 3000), 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := Apply(tc.out, tc.errOut, tc.budget)
			got := ApplyWindows(Window{Head: []byte(tc.out)}, Window{Head: []byte(tc.errOut)}, tc.budget)
			if got.Result != want {
				t.Fatalf("ApplyWindows differs from Apply:\n got %+v\nwant %+v", got.Result, want)
			}
			if want.StdoutTruncated {
				if got.StdoutOmittedBytes <= 0 || got.StdoutOmittedBytes >= int64(len(tc.out)) {
					t.Fatalf("omitted bytes %d of %d", got.StdoutOmittedBytes, len(tc.out))
				}
			}
		})
	}
}

func TestApplyWindowsGap(t *testing.T) {
	const budget = 200
	head := []byte(strings.Repeat("h", int(FetchBytes(budget))))
	tail := []byte(strings.Repeat("t", int(FetchBytes(budget))))
	w := Window{Head: head, Tail: tail, Gap: 1 << 20}
	got := ApplyWindows(w, Window{}, budget)
	if !got.StdoutTruncated || got.StdoutTotalChars != -1 {
		t.Fatalf("truncated %v total %d", got.StdoutTruncated, got.StdoutTotalChars)
	}
	if n := utf8.RuneCountInString(got.Stdout); n > budget {
		t.Fatalf("rendering has %d code points, budget %d", n, budget)
	}
	h, rest, ok := strings.Cut(got.Stdout, "\n[... ")
	if !ok || !strings.HasPrefix(h, "hhh") || !strings.HasSuffix(rest, "ttt") || !strings.Contains(rest, " bytes omitted ...]\n") {
		t.Fatalf("rendering %q", got.Stdout)
	}
	_, after, _ := strings.Cut(rest, " omitted ...]\n")
	shown := int64(len(h) + len(after))
	if got.StdoutOmittedBytes != w.Bytes()-shown {
		t.Fatalf("omitted %d, want %d", got.StdoutOmittedBytes, w.Bytes()-shown)
	}
}

func TestPage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		b        string
		chars    int
		atEnd    bool
		want     string
		wantUsed int
	}{
		{"ascii within", "abcdef", 4, false, "abcd", 4},
		{"all", "abc", 10, false, "abc", 3},
		{"multibyte", "日本語", 2, false, "日本", 6},
		{"cut sequence left for next page", "ab\xe6\x97", 10, false, "ab", 2},
		{"cut sequence at the end shown", "ab\xe6\x97", 10, true, "ab\uFFFD\uFFFD", 4},
		{"invalid byte", "a\xffb", 3, false, "a\uFFFDb", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, used := Page([]byte(tc.b), tc.chars, tc.atEnd)
			if got != tc.want || used != tc.wantUsed {
				t.Fatalf("Page(%q, %d, %v) = %q, %d; want %q, %d", tc.b, tc.chars, tc.atEnd, got, used, tc.want, tc.wantUsed)
			}
		})
	}
}

func TestApplyWindowsCountsRawBytes(t *testing.T) {
	raw := []byte(strings.Repeat("\xff", 30001))
	got := ApplyWindows(Window{Head: raw}, Window{}, 30000)
	if !got.StdoutTruncated || got.StdoutOmittedBytes <= 0 || got.StdoutOmittedBytes > 200 {
		t.Fatalf("invalid bytes: truncated %v, omitted %d bytes of %d", got.StdoutTruncated, got.StdoutOmittedBytes, len(raw))
	}
	gap := ApplyWindows(Window{Head: raw[:4000], Tail: raw[:4000], Gap: 1000}, Window{}, 1000)
	if want := int64(4000+4000+1000) - int64(1000-len("\n[... ")-len(" bytes omitted ...]\n")-4); gap.StdoutOmittedBytes != want {
		t.Fatalf("invalid bytes around a gap: omitted %d, want %d", gap.StdoutOmittedBytes, want)
	}
}
