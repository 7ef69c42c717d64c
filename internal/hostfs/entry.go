package hostfs

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// entry writes one checked entry into the temporary directory. Every name there was made by
// this archive, so the only links a name can pass through are the ones check refuses.
func (x *extractor) entry(ctx context.Context, tr *tar.Reader, h *tar.Header, name string) error {
	dst := filepath.Join(x.tmp, filepath.FromSlash(name))
	// Without setuid, setgid and sticky, and without group and other write (noWrite): a copy
	// grants no privilege, and a sandbox's world-writable file stays writable by its host
	// owner alone.
	mode := fs.FileMode(h.Mode).Perm() &^ noWrite
	if name == "." && h.Typeflag != tar.TypeDir {
		return fmt.Errorf("%w (a file in place of the destination directory)", ErrUnsafeEntry)
	}
	switch h.Typeflag {
	case tar.TypeDir:
		return x.mkdir(dst, name, mode)
	case tar.TypeReg, tar.TypeGNUSparse:
		if h.Size > x.max-x.stats.Bytes {
			return fmt.Errorf("%w of %d bytes; copy a smaller directory, or pass a larger bound if the copy allows one", ErrTooLarge, x.max)
		}
		if err := x.prepare(dst, name); err != nil {
			return err
		}
		return x.file(ctx, tr, h, dst, mode)
	case tar.TypeSymlink:
		if !linkInside(name, h.Linkname) {
			x.stats.skip(name, "a symbolic link leading outside the destination")
			return nil
		}
		if len(x.links) >= maxLinks {
			return fmt.Errorf("the archive has more than %d symbolic links", maxLinks)
		}
		if err := x.prepare(dst, name); err != nil {
			return err
		}
		if err := x.root.Symlink(filepath.FromSlash(h.Linkname), dst); err != nil {
			return err
		}
		x.links[name] = true
		return nil
	case tar.TypeLink:
		if err := x.prepare(dst, name); err != nil {
			return err
		}
		if err := x.root.Link(filepath.Join(x.tmp, filepath.FromSlash(h.Linkname)), dst); err != nil {
			return err
		}
		x.stats.Files++
		return nil
	}
	x.stats.skip(name, fmt.Sprintf("tar type %q is not a file, directory or link", h.Typeflag))
	return nil
}

func (x *extractor) file(ctx context.Context, tr *tar.Reader, h *tar.Header, dst string, mode fs.FileMode) error {
	f, err := x.root.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	n, err := io.CopyBuffer(f, ctxReader{ctx, tr}, x.buf)
	x.stats.Bytes += n
	if err == nil {
		err = f.Chmod(mode) // on the open file: exact, whatever the umask
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && !h.ModTime.IsZero() {
		err = x.root.Chtimes(dst, h.ModTime, h.ModTime)
	}
	if err != nil {
		return err
	}
	x.stats.Files++
	return nil
}

// mkdir makes a directory writable by its owner until lockDirs, whatever the archive says.
// One listed twice, or made earlier as a parent, only takes the mode.
func (x *extractor) mkdir(dst, name string, mode fs.FileMode) error {
	if info, err := x.root.Lstat(dst); err != nil || !info.IsDir() {
		if err := x.prepare(dst, name); err != nil {
			return err
		}
		if err := x.root.Mkdir(dst, 0o700); err != nil {
			return err
		}
	}
	if err := x.root.Chmod(dst, mode|0o700); err != nil {
		return err
	}
	if mode&0o700 != 0o700 {
		x.locked = append(x.locked, lockedDir{name: name, mode: mode})
	}
	return nil
}

// prepare makes name's parents and removes what an earlier entry of that name left: the last
// entry of a name wins, as with tar, but never by writing through a link.
func (x *extractor) prepare(dst, name string) error {
	if err := x.root.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := x.root.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("an earlier entry made it a directory that is not empty: %w", err)
	}
	delete(x.links, name)
	return nil
}

// lockDirs gives the directories the modes that would have stopped filling them, deepest
// first, once they are in place under rel.
func (x *extractor) lockDirs(rel string) error {
	slices.SortFunc(x.locked, func(a, b lockedDir) int {
		return strings.Count(b.name, "/") - strings.Count(a.name, "/")
	})
	for _, d := range x.locked {
		if err := x.root.Chmod(filepath.Join(rel, filepath.FromSlash(d.name)), d.mode); err != nil {
			return pathErr("setting the mode of", d.name, err)
		}
	}
	return nil
}
