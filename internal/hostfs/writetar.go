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
	"time"
)

// maxSkippedNames bounds the names Stats keeps of what a copy left out; the count goes on.
const maxSkippedNames = 20

// Stats is what a directory copy did.
type Stats struct {
	Files        int      // regular files and hard links
	Bytes        int64    // their contents
	Skipped      []string // the first entries left out, each with the reason
	SkippedCount int      // all entries left out
}

func (s *Stats) skip(name, why string) {
	if s.SkippedCount++; len(s.Skipped) < maxSkippedNames {
		s.Skipped = append(s.Skipped, name+" ("+why+")")
	}
}

// dirBatch is how many directory entries are listed at once, so that a directory of a
// million files costs no more memory than one of a hundred.
const dirBatch = 256

// WriteTar streams the directory rel as an uncompressed tar: "./" for rel itself, then its
// directories, regular files and the symbolic links whose targets stay inside rel (relative,
// without leaving it), with permissions and modification times. Links leading out, devices,
// FIFOs and sockets are skipped and listed in Stats; hard-linked files are copied as separate
// files. Everything is read through the root, and each file is checked to be what was listed,
// so a name swapped for a link during the walk cannot lead out. On an error the archive is
// left without its end blocks, so that the reader sees it as truncated.
func WriteTar(ctx context.Context, w io.Writer, root *os.Root, rel string) (Stats, error) {
	d, info, err := openRead(root, rel)
	if err != nil {
		return Stats{}, err
	}
	defer d.Close()
	if !info.IsDir() {
		return Stats{}, fmt.Errorf("%q: %w; copy a file as a file", rel, ErrNotDir)
	}
	tw := &tarWriter{tw: tar.NewWriter(w), root: root, buf: make([]byte, bufSize)}
	if err := tw.header(ctx, "./", info, tar.TypeDir, ""); err != nil {
		return tw.stats, err
	}
	if err := tw.dir(ctx, d, rel, ""); err != nil {
		return tw.stats, err
	}
	return tw.stats, tw.tw.Close()
}

type tarWriter struct {
	tw    *tar.Writer
	root  *os.Root
	buf   []byte
	stats Stats
}

// dir writes the entries of the open directory d, at rel in the root and name in the tar.
func (t *tarWriter) dir(ctx context.Context, d *os.File, rel, name string) error {
	for {
		entries, err := d.ReadDir(dirBatch)
		for _, e := range entries {
			if err := t.entry(ctx, filepath.Join(rel, e.Name()), path.Join(name, e.Name())); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(entries) == 0) {
			return nil
		}
		if err != nil {
			return pathErr("listing", rel, err)
		}
	}
}

func (t *tarWriter) entry(ctx context.Context, rel, name string) error {
	listed, err := t.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed since the listing: not part of the tree any more
	}
	if err != nil {
		return pathErr("reading", rel, err)
	}
	switch mode := listed.Mode(); {
	case mode&fs.ModeSymlink != 0:
		target, err := t.root.Readlink(rel)
		if err != nil {
			return pathErr("reading the link", rel, err)
		}
		if !linkInside(name, target) {
			t.stats.skip(name, "a symbolic link leading outside the copied directory")
			return nil
		}
		return t.header(ctx, name, listed, tar.TypeSymlink, filepath.ToSlash(target))
	case mode.IsDir(), mode.IsRegular():
		f, info, err := openRead(t.root, rel)
		if err != nil {
			return err
		}
		defer f.Close()
		if !os.SameFile(listed, info) {
			return fmt.Errorf("%q changed while it was copied; copy again once nothing writes to it", rel)
		}
		if info.IsDir() {
			if err := t.header(ctx, name+"/", info, tar.TypeDir, ""); err != nil {
				return err
			}
			return t.dir(ctx, f, rel, name)
		}
		return t.file(ctx, f, rel, name, info)
	default:
		t.stats.skip(name, typeName(mode)+" is not a file")
		return nil
	}
}

func (t *tarWriter) file(ctx context.Context, f *os.File, rel, name string, info fs.FileInfo) error {
	if err := t.header(ctx, name, info, tar.TypeReg, ""); err != nil {
		return err
	}
	// The size in the header is a promise: a file that grows is cut there, one that shrinks
	// fails the copy rather than send a short entry.
	n, err := io.CopyBuffer(t.tw, io.LimitReader(ctxReader{ctx, f}, info.Size()), t.buf)
	if err == nil && n < info.Size() {
		err = fmt.Errorf("it shrank to %d of %d bytes while it was copied; copy again once nothing writes to it", n, info.Size())
	}
	if err != nil {
		return fmt.Errorf("copying %q: %w", rel, err)
	}
	t.stats.Files++
	t.stats.Bytes += n
	return nil
}

func (t *tarWriter) header(ctx context.Context, name string, info fs.FileInfo, typ byte, link string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h := &tar.Header{Typeflag: typ, Name: name, Linkname: link, Mode: int64(info.Mode().Perm()),
		ModTime: info.ModTime().Truncate(time.Second)} // whole seconds fit the plain ustar header
	if typ == tar.TypeReg {
		h.Size = info.Size()
	}
	if err := t.tw.WriteHeader(h); err != nil {
		return fmt.Errorf("writing the archive at %q: %w", name, err)
	}
	return nil
}

// linkInside is whether a link at name (slash-separated, in the tree) to target stays in the
// tree, judged on the names alone: the link is copied as a link, never followed here.
func linkInside(name, target string) bool {
	if target == "" || filepath.IsAbs(target) || path.IsAbs(filepath.ToSlash(target)) {
		return false
	}
	return filepath.IsLocal(filepath.FromSlash(path.Join(path.Dir(name), filepath.ToSlash(target))))
}

// ctxReader stops a copy once its context ends, between two buffers.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// typeName names what is neither a file, a directory nor a link, for a person.
func typeName(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file (" + mode.Type().String() + ")"
}
