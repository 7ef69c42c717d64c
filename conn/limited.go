package conn

import "strings"

// LimitedBuffer keeps the first Max bytes written and notes in Cut that more came; writes
// never fail, so a chatty command is not killed by its own output.
type LimitedBuffer struct {
	strings.Builder
	Max int
	Cut bool
}

func (b *LimitedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.Max - b.Len(); len(p) > room {
		b.Cut = true
		p = p[:max(room, 0)]
	}
	b.Builder.Write(p)
	return n, nil
}
