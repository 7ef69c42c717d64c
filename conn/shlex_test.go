package conn_test

import (
	"errors"
	"strings"
)

// shlexSplit reproduces Python's shlex.split(s) (posix mode, whitespace_split, no
// comments), which the python runtime applies to every /execute command.
func shlexSplit(s string) ([]string, error) {
	const whitespace = " \t\r\n"
	var out []string
	var tok strings.Builder
	state, escaped := ' ', 'a' // escaped: the state to return to after an escape
	quoted := false
	emit := func() {
		if tok.Len() > 0 || quoted {
			out = append(out, tok.String())
		}
		tok.Reset()
		quoted = false
	}
	for _, c := range s {
		switch state {
		case ' ', 'a':
			switch {
			case strings.ContainsRune(whitespace, c):
				if state == 'a' || quoted {
					emit()
				}
				state = ' '
			case c == '\\':
				escaped, state = 'a', '\\'
			case c == '\'' || c == '"':
				state = c
			default:
				tok.WriteRune(c)
				state = 'a'
			}
		case '\'', '"':
			quoted = true
			switch {
			case c == state:
				state = 'a'
			case c == '\\' && state == '"':
				escaped, state = state, '\\'
			default:
				tok.WriteRune(c)
			}
		case '\\':
			// Inside double quotes only the quote and the backslash can be escaped.
			if escaped == '"' && c != '\\' && c != '"' {
				tok.WriteRune('\\')
			}
			tok.WriteRune(c)
			state = escaped
		}
	}
	switch state {
	case '\'', '"':
		return nil, errors.New("No closing quotation")
	case '\\':
		return nil, errors.New("No escaped character")
	}
	if state == 'a' || quoted {
		emit()
	}
	return out, nil
}
