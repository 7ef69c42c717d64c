package hostfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
)

// merge moves the extracted tree into the existing directory rel, name by name (renames,
// never copies): into the directories both have, replacing files, links and empty
// directories of the same names. A dry run first finds the conflict that would stop it half
// way (a file where rel has a directory with entries), so that an archive is refused before
// anything moves; what can still fail after it (permissions, a concurrent change) leaves the
// names moved so far in place.
func (x *extractor) merge(ctx context.Context, rel string) error {
	if err := x.mergeDir(ctx, x.tmp, rel, true); err != nil {
		return err
	}
	return x.mergeDir(ctx, x.tmp, rel, false)
}

func (x *extractor) mergeDir(ctx context.Context, src, dst string, dry bool) error {
	d, err := x.root.Open(src)
	if err != nil {
		return err
	}
	defer d.Close()
	for {
		entries, err := d.ReadDir(dirBatch)
		for _, e := range entries {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := x.mergeEntry(ctx, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()), e.IsDir(), dry); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(entries) == 0) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// mergeEntry moves s to t; isDir is s's type (a link is not a directory).
func (x *extractor) mergeEntry(ctx context.Context, s, t string, isDir, dry bool) error {
	info, err := x.root.Lstat(t)
	if errors.Is(err, fs.ErrNotExist) {
		if dry {
			return nil
		}
		return x.root.Rename(s, t)
	}
	if err != nil {
		return err
	}
	tDir := info.IsDir() // Lstat: a link to a directory is replaced, never merged through
	switch {
	case isDir && tDir:
		return x.mergeDir(ctx, s, t, dry)
	case tDir && dry:
		if empty, err := x.emptyDir(t); err != nil || !empty {
			rel, _ := filepath.Rel(x.tmp, s)
			return errors.Join(err, fmt.Errorf("%q: %w; remove it on the host or copy to another directory", filepath.ToSlash(rel), ErrDirInTheWay))
		}
		return nil
	case dry:
		return nil
	}
	// A file replaces a file or a link by the rename alone, atomically; a directory and a
	// non-directory cannot replace each other so.
	if isDir || tDir {
		if err := x.root.Remove(t); err != nil {
			return err
		}
	}
	return x.root.Rename(s, t)
}

func (x *extractor) emptyDir(name string) (bool, error) {
	d, err := x.root.Open(name)
	if err != nil {
		return false, err
	}
	defer d.Close()
	names, err := d.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return len(names) == 0, err
}
