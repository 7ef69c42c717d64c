package output

import (
	"strings"
	"unicode/utf8"
)

// scratchFlush bounds the buffer used to decode invalid UTF-8 before it is
// stored, so replacing bad bytes costs no allocation per write.
const scratchFlush = 4096

// stream decodes one output stream incrementally and keeps only what any
// budgeted rendering can show: the first budget code points and the last
// budget code points (as the last UTFMax*budget decoded bytes).
type stream struct {
	budget    int
	raw       int64
	carry     [utf8.UTFMax]byte // an unfinished multi-byte sequence
	ncarry    int
	count     int // decoded code points, excluding carry
	head      []byte
	headRunes int
	tail      ring
	scratch   []byte
	line      lineTracker
	lines     bool // feed line; off unless someone asked for LastLine (it costs a scan per write)
}

func newStream(budget int) stream {
	return stream{budget: budget, tail: ring{max: utf8.UTFMax * budget}}
}

func (s *stream) write(p []byte) {
	s.raw += int64(len(p))
	if s.ncarry > 0 {
		p = s.finishCarry(p)
		if s.ncarry > 0 {
			return
		}
	}
	cut := incompleteStart(p)
	s.decode(p[:cut])
	s.ncarry = copy(s.carry[:], p[cut:])
}

// finishCarry decodes the carried sequence using the first bytes of p and
// returns the rest of p. If p is too short to decide, it joins the carry.
func (s *stream) finishCarry(p []byte) []byte {
	var buf [2 * utf8.UTFMax]byte
	n := copy(buf[:], s.carry[:s.ncarry])
	b := buf[:n+copy(buf[n:], p)]
	i := 0
	for i < n && utf8.FullRune(b[i:]) {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			rb := [...]byte{0xEF, 0xBF, 0xBD} // U+FFFD
			s.put(rb[:], 1)
		} else {
			s.put(b[i:i+size], 1)
		}
		i += size
	}
	if i < n {
		// b holds all of p: with more, b[i:] would be a full rune.
		s.ncarry = copy(s.carry[:], b[i:])
		return nil
	}
	s.ncarry = 0
	return p[i-n:]
}

// incompleteStart returns where a multi-byte sequence that later bytes could
// still complete begins at the end of p, or len(p) if there is none. Only a
// lead byte in the last UTFMax-1 bytes can start one; every byte before it
// decodes the same whatever follows.
func incompleteStart(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(p[i]) {
			if utf8.FullRune(p[i:]) {
				return len(p)
			}
			return i
		}
	}
	return len(p)
}

// decode stores b, which ends on a decidable boundary, replacing invalid
// bytes with U+FFFD.
func (s *stream) decode(b []byte) {
	if utf8.Valid(b) {
		s.put(b, utf8.RuneCount(b))
		return
	}
	if s.scratch == nil {
		s.scratch = make([]byte, 0, scratchFlush+len(replacement))
	}
	out, runes := s.scratch[:0], 0
	for i := 0; i < len(b); {
		if c := b[i]; c < utf8.RuneSelf {
			out = append(out, c)
			i++
		} else if r, size := utf8.DecodeRune(b[i:]); r == utf8.RuneError && size == 1 {
			out = append(out, replacement...)
			i++
		} else {
			out = append(out, b[i:i+size]...)
			i += size
		}
		runes++
		if len(out) >= scratchFlush {
			s.put(out, runes)
			out, runes = out[:0], 0
		}
	}
	if len(out) > 0 {
		s.put(out, runes)
	}
}

// put stores valid UTF-8 holding runes code points.
func (s *stream) put(b []byte, runes int) {
	s.count += runes
	if need := s.budget - s.headRunes; need > 0 {
		take, n := len(b), runes
		if runes > need {
			take, n = prefixBytes(string(b), need), need
		}
		s.head = appendBounded(s.head, b[:take], utf8.UTFMax*s.budget)
		s.headRunes += n
	}
	s.tail.write(b)
	if s.lines {
		s.line.feed(b)
	}
}

// view snapshots the stream as if it ended now: an unfinished sequence
// decodes to one U+FFFD per byte, as it would at end of input.
func (s *stream) view() streamText {
	return streamText{
		head:      string(s.head),
		headRunes: s.headRunes,
		tail:      string(s.tail.contents()),
		count:     s.count,
		pending:   s.ncarry,
	}
}

// streamText is a captured stream: head holds its first min(budget, count)
// decoded code points, tail ends with at least its last min(budget, count),
// and pending replacement characters follow both.
type streamText struct {
	head, tail string
	headRunes  int
	count      int
	pending    int
}

func (t streamText) runeLen() int { return t.count + t.pending }

func (t streamText) prefix(n int) string {
	if n > t.headRunes {
		// head is the whole decoded stream; the rest is pending.
		return t.head + strings.Repeat(replacement, n-t.headRunes)
	}
	return t.head[:prefixBytes(t.head, n)]
}

func (t streamText) suffix(n int) string {
	if n <= t.pending {
		return strings.Repeat(replacement, n)
	}
	b := suffixBytes(t.tail, n-t.pending)
	return t.tail[len(t.tail)-b:] + strings.Repeat(replacement, t.pending)
}
