package workspace

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
)

// DefaultMaxExpandedBytes bounds what an upload's archive may expand to (1 GiB) when the
// operator sets no other bound: far above a project's sources, far below a bomb's terabytes.
const DefaultMaxExpandedBytes = 1 << 30

// Errors CheckArchive answers, besides ErrBadArchive (a truncated or corrupt stream).
var (
	ErrEmptyArchive  = errors.New("the archive holds no entries")
	ErrUnsafeEntry   = errors.New("an archive entry leaves the destination directory")
	ErrArchiveExpand = errors.New("the archive expands beyond this server's bound")
)

// ExpandError is ErrArchiveExpand with the bound it passed.
type ExpandError struct{ Limit int64 }

func (e *ExpandError) Error() string {
	return fmt.Sprintf("%v of %d bytes", ErrArchiveExpand, e.Limit)
}
func (e *ExpandError) Unwrap() error { return ErrArchiveExpand }

// CheckArchive reads a whole upload (a tar, gzip-compressed or not) before any of it reaches
// the sandbox, and returns its entry count. The sandbox's tar would unpack a truncated
// stream's first entries, an empty one as nothing and a bomb until the disk is full; here
// each is refused whole, with what is wrong with it. maxExpanded bounds the tar stream and
// the files' sizes (0: DefaultMaxExpandedBytes).
func CheckArchive(data []byte, maxExpanded int64) (int, error) {
	if maxExpanded <= 0 {
		maxExpanded = DefaultMaxExpandedBytes
	}
	var src io.Reader = bytes.NewReader(data)
	gzipped := len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b
	if gzipped {
		zr, err := gzip.NewReader(src)
		if err != nil {
			return 0, fmt.Errorf("%w: its gzip header is broken (%w)", ErrBadArchive, err)
		}
		src = zr
	}
	cr := &countingReader{r: src, limit: maxExpanded}
	tr := tar.NewReader(cr)
	n, links := 0, map[string]bool{}
	var files int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, streamError(err, n)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue // PAX defaults for the entries after it, not an entry of its own
		}
		if err := checkEntry(h, links); err != nil {
			return n, fmt.Errorf("entry %d %q: %w", n+1, h.Name, err)
		}
		if files += max(h.Size, 0); files > maxExpanded {
			return n, &ExpandError{Limit: maxExpanded}
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return n, streamError(err, n)
		}
		n++
	}
	// Go's reader takes a tar cut at an entry's end as finished; tar writers always add
	// the two zero blocks of the end, so their absence means the rest is missing.
	if cr.zeros < 2*512 {
		return n, fmt.Errorf("%w: it is truncated after %d entries (no end-of-archive blocks)", ErrBadArchive, n)
	}
	if n == 0 {
		return 0, fmt.Errorf("%w (an empty tar)", ErrEmptyArchive)
	}
	if gzipped {
		// The gzip trailer's checksum and length are what tell a whole stream from a cut one.
		if _, err := io.Copy(io.Discard, cr); err != nil {
			return n, streamError(err, n)
		}
	}
	return n, nil
}

// checkEntry refuses names the sandbox's tar would skip or resolve outside the destination:
// a ".." component (tar skips the entry but unpacks the others), a hard link to such a
// name, or a path through a symbolic link an earlier entry made.
func checkEntry(h *tar.Header, links map[string]bool) error {
	name := strings.Trim(h.Name, "/")
	if hasDotDot(name) {
		return ErrUnsafeEntry
	}
	if l := throughLink(name, links); l != "" {
		return fmt.Errorf("%w (through the symbolic link %q of an earlier entry)", ErrUnsafeEntry, l)
	}
	if h.Typeflag == tar.TypeLink {
		target := strings.Trim(h.Linkname, "/")
		if l := throughLink(target, links); hasDotDot(target) || l != "" {
			return fmt.Errorf("%w (a hard link to %q)", ErrUnsafeEntry, h.Linkname)
		}
	}
	// A later entry of the same name replaces the link, and with it the danger.
	if key := clean(name); h.Typeflag == tar.TypeSymlink {
		links[key] = true
	} else {
		delete(links, key)
	}
	return nil
}

// throughLink is the first directory of name that is a symbolic link in links, or "".
func throughLink(name string, links map[string]bool) string {
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts); i++ {
		if d := clean(strings.Join(parts[:i], "/")); links[d] {
			return d
		}
	}
	return ""
}

// clean is name without "." components or empty ones, as the sandbox's tar resolves it.
func clean(name string) string {
	var kept []string
	for _, c := range strings.Split(name, "/") {
		if c != "" && c != "." {
			kept = append(kept, c)
		}
	}
	return strings.Join(kept, "/")
}

func hasDotDot(name string) bool {
	for _, c := range strings.Split(name, "/") {
		if c == ".." {
			return true
		}
	}
	return false
}

// streamError tells a truncated stream from a corrupt one, after n whole entries.
func streamError(err error, n int) error {
	var ee *ExpandError
	switch {
	case errors.As(err, &ee):
		return ee
	case errors.Is(err, io.ErrUnexpectedEOF) && n == 0:
		return fmt.Errorf("%w: it is not a tar archive, or it is truncated before its first entry", ErrBadArchive)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: it is truncated after %d entries", ErrBadArchive, n)
	case errors.Is(err, tar.ErrHeader) && n == 0:
		return fmt.Errorf("%w: it is not a tar archive (%w)", ErrBadArchive, err)
	case errors.Is(err, tar.ErrHeader):
		return fmt.Errorf("%w: entry %d has a corrupt header (%w)", ErrBadArchive, n+1, err)
	}
	return fmt.Errorf("%w: it is corrupt after %d entries (%w)", ErrBadArchive, n, err)
}

// countingReader fails once more than limit bytes came through, and counts the zero bytes
// that ended what it returned so far (the end-of-archive blocks).
type countingReader struct {
	r     io.Reader
	limit int64
	read  int64
	zeros int64
	err   error
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if room := c.limit - c.read + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	if c.read > c.limit {
		// Without the bytes: io.ReadFull drops an error that comes with a full buffer.
		c.err = &ExpandError{Limit: c.limit}
		return 0, c.err
	}
	i := n - 1
	for i >= 0 && p[i] == 0 {
		i--
	}
	if i >= 0 {
		c.zeros = int64(n - 1 - i)
	} else {
		c.zeros += int64(n)
	}
	return n, err
}
