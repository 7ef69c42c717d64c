package hostfs

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Errors of ExtractTar, besides those of the paths.
var (
	ErrUnsafeEntry = errors.New("an archive entry leaves the destination directory")
	ErrTooLarge    = errors.New("the archive expands beyond the copy's bound")
	ErrBadArchive  = errors.New("the archive cannot be read")
	ErrDirInTheWay = errors.New("the archive has a file where the destination has a directory that is not empty")
)

// maxLinks bounds the symbolic links of one archive, whose names are kept to refuse entries
// through them (a project's node_modules has thousands; a million would be memory).
const maxLinks = 1 << 16

// ExtractTar extracts an uncompressed tar into the directory rel, which is created (with its
// missing parents) or merged into: files of an existing directory that the archive does not
// name are kept, a file of the archive replaces one of the same name. It is all or nothing:
// the archive is extracted into a temporary directory, beside rel or inside an existing one,
// and moved into place only once it is whole; any error removes it (only a merge that fails
// after its dry run, on permissions or a concurrent change, leaves what it moved). r is read
// up to the archive's end blocks; after an error it is not read further, so a caller feeding
// it through a pipe closes the pipe. Entries with a ".."
// component, absolute names, or names through a symbolic link of the archive are refused,
// as is an archive whose files hold more than maxBytes. Symbolic links leading outside rel,
// devices and FIFOs are skipped and listed in Stats. Permissions (without setuid, setgid and
// sticky bits) and files' modification times are kept; owners are not.
func ExtractTar(ctx context.Context, r io.Reader, root *os.Root, rel string, maxBytes int64) (Stats, error) {
	if maxBytes <= 0 {
		return Stats{}, fmt.Errorf("extracting into %q: the bound %d must be positive", rel, maxBytes)
	}
	exists := false
	if info, err := root.Lstat(rel); err == nil {
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			return Stats{}, fmt.Errorf("%q: %w; copy to the directory it points to instead", rel, ErrSymlink)
		case !info.IsDir():
			return Stats{}, fmt.Errorf("%q: %w; choose a directory, or a path that does not exist yet", rel, ErrNotDir)
		}
		exists = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Stats{}, pathErr("checking", rel, err)
	}
	var made []string
	if !exists {
		var err error
		if made, err = makeParents(root, filepath.Dir(rel)); err != nil {
			return Stats{}, err
		}
	}
	tmp, err := tempName(filepath.Dir(rel), filepath.Base(rel))
	if exists {
		tmp, err = tempName(rel, "extract")
	}
	if err == nil {
		err = root.Mkdir(tmp, 0o700)
	}
	if err != nil {
		removeMade(root, made)
		return Stats{}, pathErr("creating a temporary directory in", filepath.Dir(tmp), err)
	}
	x := &extractor{root: root, tmp: tmp, max: maxBytes, links: map[string]bool{}, buf: make([]byte, bufSize)}
	err = x.run(ctx, r)
	if err == nil && exists {
		err = x.merge(ctx, rel)
	} else if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		_ = root.RemoveAll(tmp)
		removeMade(root, made)
		return x.stats, fmt.Errorf("extracting into %q: %w", rel, err)
	}
	if exists {
		_ = root.RemoveAll(tmp) // emptied by the merge
		// A merge keeps the modes of directories that were there, the destination's first.
		x.locked = slices.DeleteFunc(x.locked, func(d lockedDir) bool { return d.name == "." })
	}
	return x.stats, x.lockDirs(rel)
}

type extractor struct {
	root  *os.Root
	tmp   string
	max   int64
	links map[string]bool // symbolic links the archive made, by cleaned name
	// locked are directories whose modes deny their owner writing: they are given those
	// modes only once in place, so that extraction and the merge can still fill them.
	locked []lockedDir
	buf    []byte
	stats  Stats
}

type lockedDir struct {
	name string
	mode fs.FileMode
}

func (x *extractor) run(ctx context.Context, r io.Reader) error {
	zr := &zeroTail{r: r}
	tr := tar.NewReader(zr)
	entries := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%w after %d entries: %w", ErrBadArchive, entries, err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue // PAX defaults for the entries after it, not an entry of its own
		}
		entries++
		name, err := x.check(h)
		if err != nil {
			return fmt.Errorf("entry %d %q: %w", entries, h.Name, err)
		}
		if err := x.entry(ctx, tr, h, name); err != nil {
			return fmt.Errorf("entry %d %q: %w", entries, h.Name, err)
		}
	}
	// Go's reader takes a stream cut at an entry's end as finished; a tar writer always ends
	// with two zero blocks, so without them the rest of the archive is missing.
	if zr.zeros < 2*512 {
		return fmt.Errorf("%w: it is truncated after %d entries", ErrBadArchive, entries)
	}
	if entries == 0 {
		return fmt.Errorf("%w: it holds no entries", ErrBadArchive)
	}
	return nil
}

// check refuses what would land outside the destination and returns the entry's cleaned
// name ("." for the destination itself).
func (x *extractor) check(h *tar.Header) (string, error) {
	if path.IsAbs(h.Name) || filepath.IsAbs(h.Name) || hasDotDot(h.Name) {
		return "", ErrUnsafeEntry
	}
	name := path.Clean(h.Name)
	if name != "." && !filepath.IsLocal(filepath.FromSlash(name)) {
		return "", ErrUnsafeEntry
	}
	if l := x.throughLink(name); l != "" {
		return "", fmt.Errorf("%w (through the symbolic link %q of an earlier entry)", ErrUnsafeEntry, l)
	}
	if h.Typeflag == tar.TypeLink {
		target := path.Clean(h.Linkname)
		if path.IsAbs(h.Linkname) || hasDotDot(h.Linkname) || !filepath.IsLocal(filepath.FromSlash(target)) || x.throughLink(target) != "" {
			return "", fmt.Errorf("%w (a hard link to %q)", ErrUnsafeEntry, h.Linkname)
		}
	}
	return name, nil
}

// throughLink is the first parent directory of name that is a symbolic link of the archive.
func (x *extractor) throughLink(name string) string {
	for i := 0; i < len(name); i++ {
		if name[i] == '/' && x.links[name[:i]] {
			return name[:i]
		}
	}
	return ""
}

func hasDotDot(name string) bool {
	for _, c := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == filepath.Separator }) {
		if c == ".." {
			return true
		}
	}
	return false
}

// zeroTail counts the zero bytes that ended what it returned so far (the end blocks).
type zeroTail struct {
	r     io.Reader
	zeros int
}

func (z *zeroTail) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	i := n - 1
	for i >= 0 && p[i] == 0 {
		i--
	}
	if i >= 0 {
		z.zeros = n - 1 - i
	} else {
		z.zeros += n
	}
	return n, err
}
