package output

import (
	"strings"
	"unicode/utf8"
)

// replacement is U+FFFD in UTF-8, what each invalid byte decodes to.
const replacement = "\uFFFD"

// Decode turns command output bytes into text: valid UTF-8 is kept and each
// invalid byte becomes U+FFFD, the same as string([]rune(string(b))).
func Decode(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 2*len(replacement))
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			sb.WriteByte(b[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			sb.WriteString(replacement)
		} else {
			sb.Write(b[i : i+size])
		}
		i += size
	}
	return sb.String()
}
