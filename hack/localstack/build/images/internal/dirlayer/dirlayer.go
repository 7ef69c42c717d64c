// Package dirlayer writes a directory tree as a deterministic image layer (a tar stream): the
// same tree gives the same bytes whoever builds it, whenever, as whatever user.
package dirlayer

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Epoch is the modification time of every entry: file times on disk depend on when the
// packages were unpacked, not on what they hold, so they are not part of the image.
var Epoch = time.Unix(0, 0).UTC()

// Owner is a numeric uid:gid.
type Owner struct{ UID, GID int }

// Owners maps an absolute path inside the image to the owner of that path and everything
// under it. Entries not covered are owned by root: ownership on disk is that of whoever
// unpacked the tree, which must not leak into the image.
type Owners map[string]Owner

// ParseOwner parses "PATH=UID:GID".
func ParseOwner(s string) (string, Owner, error) {
	p, ids, ok := strings.Cut(s, "=")
	u, g, ok2 := strings.Cut(ids, ":")
	if !ok || !ok2 || !path.IsAbs(p) {
		return "", Owner{}, fmt.Errorf("owner %q: want /PATH=UID:GID, e.g. /workspace=1000:1000", s)
	}
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if err1 != nil || err2 != nil || uid < 0 || gid < 0 {
		return "", Owner{}, fmt.Errorf("owner %q: uid and gid must be non-negative numbers", s)
	}
	return path.Clean(p), Owner{uid, gid}, nil
}

// of returns the owner of the image path p: the entry of the longest matching prefix.
func (o Owners) of(p string) Owner {
	for q := p; ; q = path.Dir(q) {
		if ow, ok := o[q]; ok {
			return ow
		}
		if q == "/" {
			return Owner{}
		}
	}
}

// Write writes the tree under root to w as a tar stream (uncompressed), entries in WalkDir's
// lexical order, paths relative to the image root ("etc/passwd"), modes from disk, owners from
// owners, times set to Epoch. Hard links inside the tree stay hard links; sockets, devices
// and fifos are refused (a package tree never holds them).
func Write(w io.Writer, root string, owners Owners) error {
	tw := tar.NewWriter(w)
	links := map[[2]uint64]string{} // (dev, ino) -> first path written
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		return writeEntry(tw, p, filepath.ToSlash(rel), owners, links)
	})
	if err != nil {
		return fmt.Errorf("layer of %s: %w", root, err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("layer of %s: %w", root, err)
	}
	return nil
}

func writeEntry(tw *tar.Writer, p, rel string, owners Owners, links map[[2]uint64]string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	ow := owners.of("/" + rel)
	hdr := &tar.Header{Name: rel, Mode: int64(fi.Mode().Perm()), Uid: ow.UID, Gid: ow.GID, ModTime: Epoch}
	if fi.Mode()&fs.ModeSetuid != 0 {
		hdr.Mode |= 0o4000
	}
	if fi.Mode()&fs.ModeSetgid != 0 {
		hdr.Mode |= 0o2000
	}
	if fi.Mode()&fs.ModeSticky != 0 {
		hdr.Mode |= 0o1000
	}
	switch t := fi.Mode().Type(); {
	case t == fs.ModeDir:
		hdr.Typeflag, hdr.Name = tar.TypeDir, rel+"/"
	case t == fs.ModeSymlink:
		hdr.Typeflag = tar.TypeSymlink
		if hdr.Linkname, err = os.Readlink(p); err != nil {
			return err
		}
	case t.IsRegular():
		hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			key := [2]uint64{uint64(st.Dev), st.Ino}
			if first, seen := links[key]; seen {
				hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
			} else {
				links[key] = rel
			}
		}
	default:
		return fmt.Errorf("%s: %s files cannot go into a layer", p, t)
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}
