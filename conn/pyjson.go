package conn

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The python runtime answers /execute with one JSON object holding the whole output. Decoding
// it with encoding/json would hold the output (and its decoded copy) in memory; this decoder
// streams the two strings into the caller's writers instead, so memory stays bounded by the
// output budget however much the command printed.

var errExecJSON = errors.New("malformed /execute response")

type execStream struct {
	r        *bufio.Reader
	buf      []byte // decoded bytes waiting to be written
	exitCode *int
}

// decodeExecStream reads {"stdout": "...", "stderr": "...", "exit_code": N} from r, writing
// the decoded strings to the writers as it goes.
func decodeExecStream(r io.Reader, stdout, stderr io.Writer) (*int, error) {
	s := &execStream{r: bufio.NewReaderSize(r, 64<<10), buf: make([]byte, 0, 32<<10)}
	if err := s.expect('{'); err != nil {
		return nil, err
	}
	for first := true; ; first = false {
		c, err := s.next()
		if err != nil {
			return nil, err
		}
		if c == '}' && first {
			return s.exitCode, nil
		}
		if !first {
			if c == '}' {
				return s.exitCode, nil
			}
			if c != ',' {
				return nil, fmt.Errorf("%w: want , or }", errExecJSON)
			}
			if c, err = s.next(); err != nil {
				return nil, err
			}
		}
		if c != '"' {
			return nil, fmt.Errorf("%w: want a key", errExecJSON)
		}
		var key []byte
		if err := s.str(func(p []byte) error { key = append(key, p...); return nil }); err != nil {
			return nil, err
		}
		if err := s.expect(':'); err != nil {
			return nil, err
		}
		switch string(key) {
		case "stdout":
			err = s.value(stdout)
		case "stderr":
			err = s.value(stderr)
		case "exit_code":
			err = s.number()
		default:
			err = s.value(io.Discard)
		}
		if err != nil {
			return nil, err
		}
	}
}

func (s *execStream) next() (byte, error) {
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return 0, fmt.Errorf("%w: %w", errExecJSON, err)
		}
		if c != ' ' && c != '\n' && c != '\r' && c != '\t' {
			return c, nil
		}
	}
}

func (s *execStream) expect(want byte) error {
	c, err := s.next()
	if err == nil && c != want {
		err = fmt.Errorf("%w: want %q, got %q", errExecJSON, want, c)
	}
	return err
}

// value decodes a string into w; null counts as empty.
func (s *execStream) value(w io.Writer) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	switch c {
	case '"':
		return s.str(func(p []byte) error { _, err := w.Write(p); return err })
	case 'n':
		return s.literal("ull")
	}
	return fmt.Errorf("%w: want a string", errExecJSON)
}

func (s *execStream) literal(rest string) error {
	for i := 0; i < len(rest); i++ {
		if c, err := s.r.ReadByte(); err != nil || c != rest[i] {
			return fmt.Errorf("%w: bad literal", errExecJSON)
		}
	}
	return nil
}

// number reads exit_code: an integer or null.
func (s *execStream) number() error {
	c, err := s.next()
	if err != nil {
		return err
	}
	if c == 'n' {
		return s.literal("ull")
	}
	digits := []byte{c}
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return fmt.Errorf("%w: %w", errExecJSON, err)
		}
		if (c < '0' || c > '9') && c != '-' {
			_ = s.r.UnreadByte()
			break
		}
		digits = append(digits, c)
	}
	n, err := strconv.Atoi(string(digits))
	if err != nil {
		return fmt.Errorf("%w: exit_code %q", errExecJSON, digits)
	}
	s.exitCode = &n
	return nil
}

// str decodes a JSON string body (after its opening quote), handing decoded bytes to emit in
// chunks. Invalid escapes are errors; lone surrogates become U+FFFD, as encoding/json does.
func (s *execStream) str(emit func([]byte) error) error {
	s.buf = s.buf[:0]
	flush := func() error {
		if len(s.buf) == 0 {
			return nil
		}
		err := emit(s.buf)
		s.buf = s.buf[:0]
		return err
	}
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return fmt.Errorf("%w: unterminated string: %w", errExecJSON, err)
		}
		switch {
		case c == '"':
			return flush()
		case c == '\\':
			if err := s.escape(); err != nil {
				return err
			}
		case c < 0x20:
			return fmt.Errorf("%w: control character in string", errExecJSON)
		default:
			s.buf = append(s.buf, c)
		}
		if len(s.buf) >= cap(s.buf)-utf8.UTFMax {
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

func (s *execStream) escape() error {
	c, err := s.r.ReadByte()
	if err != nil {
		return fmt.Errorf("%w: %w", errExecJSON, err)
	}
	switch c {
	case '"', '\\', '/':
		s.buf = append(s.buf, c)
	case 'b':
		s.buf = append(s.buf, '\b')
	case 'f':
		s.buf = append(s.buf, '\f')
	case 'n':
		s.buf = append(s.buf, '\n')
	case 'r':
		s.buf = append(s.buf, '\r')
	case 't':
		s.buf = append(s.buf, '\t')
	case 'u':
		r, err := s.hex4()
		if err != nil {
			return err
		}
		if utf16.IsSurrogate(r) {
			// A high surrogate pairs with a following \uXXXX low one.
			if b, _ := s.r.Peek(2); len(b) == 2 && b[0] == '\\' && b[1] == 'u' {
				_, _ = s.r.Discard(2)
				r2, err := s.hex4()
				if err != nil {
					return err
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
				} else {
					s.buf = utf8.AppendRune(s.buf, utf8.RuneError)
					r = r2
					if utf16.IsSurrogate(r) {
						r = utf8.RuneError
					}
				}
			} else {
				r = utf8.RuneError
			}
		}
		s.buf = utf8.AppendRune(s.buf, r)
	default:
		return fmt.Errorf("%w: bad escape \\%c", errExecJSON, c)
	}
	return nil
}

func (s *execStream) hex4() (rune, error) {
	var b [4]byte
	if _, err := io.ReadFull(s.r, b[:]); err != nil {
		return 0, fmt.Errorf("%w: %w", errExecJSON, err)
	}
	n, err := strconv.ParseUint(string(b[:]), 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: bad \\u escape", errExecJSON)
	}
	return rune(n), nil
}
