package output

import (
	"strings"
	"testing"
)

func BenchmarkCapture(b *testing.B) {
	inputs := []struct {
		name  string
		chunk []byte
	}{
		{name: "ascii", chunk: []byte(pattern(32<<10, "log line", "\n")[:32<<10])},
		{name: "mixed", chunk: mixedChunk()},
		{name: "binary", chunk: []byte(strings.Repeat("\xff\x00\xe2\x82\x80\xc0", 32<<10/6))},
	}
	for _, in := range inputs {
		b.Run(in.name, func(b *testing.B) {
			c := NewCapture(DefaultBudget)
			b.SetBytes(int64(len(in.chunk)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = c.Stdout().Write(in.chunk)
			}
			_ = c.Result()
		})
	}
}

func BenchmarkApply(b *testing.B) {
	stdout := pattern(1<<20, "a", "é", "😀")
	stderr := pattern(1<<16, "warn\n")
	b.SetBytes(int64(len(stdout) + len(stderr)))
	b.ReportAllocs()
	for b.Loop() {
		_ = Apply(stdout, stderr, DefaultBudget)
	}
}
