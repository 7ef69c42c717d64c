package output

import (
	"strings"
	"testing"
)

func TestLastLineIsOffUnlessAsked(t *testing.T) {
	c := NewCapture(DefaultBudget)
	_, _ = c.Stdout().Write([]byte("hello\n"))
	if got := c.LastLine(); got != "" {
		t.Errorf("LastLine() = %q without TrackLines", got)
	}
}

func TestLastLine(t *testing.T) {
	type write struct {
		stderr bool
		data   string
	}
	long := strings.Repeat("é", 250)
	tests := []struct {
		name   string
		writes []write
		want   string
	}{
		{name: "nothing written", want: ""},
		{name: "only blank lines", writes: []write{{data: "\n  \n\t\r\n"}}, want: ""},
		{name: "single line", writes: []write{{data: "hello\n"}}, want: "hello"},
		{name: "trimmed", writes: []write{{data: "  step 1 of 3 \t\n"}}, want: "step 1 of 3"},
		{name: "trailing blank lines skipped", writes: []write{{data: "done\n\n   \n"}}, want: "done"},
		{name: "latest of several", writes: []write{{data: "one\ntwo\nthree\n"}}, want: "three"},
		{name: "unterminated line counts", writes: []write{{data: "one\ntw"}}, want: "tw"},
		{name: "line split across writes", writes: []write{{data: "do"}, {data: "wnloa"}, {data: "ding\n\n"}}, want: "downloading"},
		{name: "carriage return progress", writes: []write{{data: "10%\r50%\r"}, {data: "90%\r"}}, want: "90%"},
		{name: "crlf", writes: []write{{data: "a\r\nb\r\n"}}, want: "b"},
		{name: "stderr is later", writes: []write{{data: "out\n"}, {stderr: true, data: "err\n"}}, want: "err"},
		{name: "blank stderr does not hide stdout", writes: []write{{data: "out\n"}, {stderr: true, data: "\n\n"}}, want: "out"},
		{name: "stdout is later", writes: []write{{stderr: true, data: "err\n"}, {data: "out"}}, want: "out"},
		{name: "capped at 200 code points", writes: []write{{data: long + "\n"}}, want: long[:400]},
		{name: "long partial capped", writes: []write{{data: "  " + long}}, want: long[:400]},
		{name: "invalid bytes shown as replacement", writes: []write{{data: "bad \xff byte\n"}}, want: "bad \uFFFD byte"},
		{name: "multi-byte split across writes", writes: []write{{data: "caf\xc3"}, {data: "\xa9\n"}}, want: "café"},
		{name: "leading space across writes", writes: []write{{data: "   "}, {data: "  x  "}}, want: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCapture(DefaultBudget)
			c.TrackLines()
			for _, w := range tt.writes {
				dst := c.Stdout()
				if w.stderr {
					dst = c.Stderr()
				}
				_, _ = dst.Write([]byte(w.data))
			}
			if got := c.LastLine(); got != tt.want {
				t.Errorf("LastLine() = %q, want %q", got, tt.want)
			}
		})
	}
}
