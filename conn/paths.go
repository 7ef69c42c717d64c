package conn

import (
	"fmt"
	"path"
	"strings"
)

// escapePath percent-encodes every byte outside [A-Za-z0-9-_.~], so '/' becomes %2F. Both
// runtimes take the path as one URL segment; an unencoded "//" or "/./" would make Go's
// ServeMux answer with a redirect, which we refuse to follow.
func escapePath(p string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(p) * 3)
	for i := 0; i < len(p); i++ {
		c := p[i]
		if isUnreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

// shQuote quotes s for a POSIX shell (and for Python's shlex, which follows the same
// single-quote rules): inside single quotes nothing is special, and a single quote is
// written as close quote, backslash-escaped quote, reopen quote.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shJoin quotes every argument so the receiver splits them back into exactly argv.
func shJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shQuote(a)
	}
	return strings.Join(q, " ")
}

// uploadPath validates a destination path for Upload and returns it cleaned and relative
// (no leading '/'). '..' segments are refused outright rather than resolved, so a model
// cannot reach outside the working directory by accident.
func uploadPath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("upload path is empty: name a file")
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return "", fmt.Errorf("upload path %q contains a control character", p)
		}
	}
	if strings.HasSuffix(p, "/") {
		return "", fmt.Errorf("upload path %q ends with '/': name a file, not a directory", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", fmt.Errorf("upload path %q contains a '..' segment: %w (use a path inside the sandbox's working directory)", p, ErrDenied)
		}
	}
	rel := strings.TrimPrefix(path.Clean("/"+p), "/")
	if rel == "" {
		return "", fmt.Errorf("upload path %q names the root directory: name a file", p)
	}
	return rel, nil
}

// filePath checks the path of Download, List and Exists and returns the one to send. As in
// the runtimes, a leading '/' is relative to the working directory. A path whose '..'
// segments climb above it is refused here, before any request, with the error the other file
// tools give: the runtimes answer it unevenly (403, or for ".." alone a redirect, as Go's
// ServeMux cleans "/v1/files/.."). The working directory itself is sent as "", since "."
// alone would be redirected too; any other path goes as given, '/' encoded.
func filePath(op, p string) (string, error) {
	clean := path.Clean(strings.TrimLeft(p, "/"))
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%s: %w (it leaves the sandbox's working directory)", op, ErrDenied)
	}
	if clean == "." {
		return "", nil
	}
	return p, nil
}
