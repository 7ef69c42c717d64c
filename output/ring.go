package output

// ring keeps the last max bytes written. It grows on demand so short outputs
// stay small, and wraps once it reaches max.
type ring struct {
	buf  []byte
	max  int
	w    int // next write position once wrapped
	full bool
}

func (r *ring) write(b []byte) {
	if !r.full {
		room := r.max - len(r.buf)
		if len(b) <= room {
			r.buf = appendBounded(r.buf, b, r.max)
			return
		}
		r.buf = appendBounded(r.buf, b[:room], r.max)
		b = b[room:]
		r.full = true
	}
	if len(b) >= r.max {
		copy(r.buf, b[len(b)-r.max:])
		r.w = 0
		return
	}
	n := copy(r.buf[r.w:], b)
	if n < len(b) {
		r.w = copy(r.buf, b[n:])
		return
	}
	r.w += n
	if r.w == r.max {
		r.w = 0
	}
}

// contents returns the retained bytes in order. Once wrapped, the first bytes
// may be the end of a code point cut by overwriting.
func (r *ring) contents() []byte {
	if !r.full {
		return r.buf
	}
	out := make([]byte, 0, r.max)
	out = append(out, r.buf[r.w:]...)
	return append(out, r.buf[:r.w]...)
}

// appendBounded appends b to buf, growing capacity geometrically but never
// beyond limit, so retained memory has a hard ceiling. The caller guarantees
// len(buf)+len(b) <= limit.
func appendBounded(buf, b []byte, limit int) []byte {
	need := len(buf) + len(b)
	if need > cap(buf) {
		c := min(max(2*cap(buf), need, 512), limit)
		grown := make([]byte, len(buf), c)
		copy(grown, buf)
		buf = grown
	}
	return append(buf, b...)
}
