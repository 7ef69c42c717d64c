package hostfs

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// tree describes every path under dir: type, permissions, size and sha256 or link target.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		desc := info.Mode().String()
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		case info.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			h := sha256.New()
			n, err := io.Copy(h, f)
			if err != nil {
				return err
			}
			desc += " " + strconv.FormatInt(n, 10) + " " + hex.EncodeToString(h.Sum(nil))
		}
		m[filepath.ToSlash(rel)] = desc
		return nil
	}))
	return m
}

func TestTarRoundTrip(t *testing.T) {
	src, dst := realTempDir(t), realTempDir(t)
	outside := realTempDir(t)
	write := func(name string, data []byte, mode fs.FileMode) {
		p := filepath.Join(src, filepath.FromSlash(name))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, data, 0o600))
		must(t, os.Chmod(p, mode))
	}
	big := make([]byte, 20<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	write("a/b/c/deep.txt", []byte("deep"), 0o644)
	write("empty", nil, 0o644)
	write("big.bin", big, 0o644)
	write("run.sh", []byte("#!/bin/sh\necho hi\n"), 0o755)
	write("readonly", []byte("ro"), 0o444)
	must(t, os.Mkdir(filepath.Join(src, "emptydir"), 0o755))
	must(t, os.Symlink("a/b/c/deep.txt", filepath.Join(src, "link-in")))
	must(t, os.Symlink("../../run.sh", filepath.Join(src, "a", "b", "link-up")))
	must(t, os.Symlink(outside, filepath.Join(src, "link-out")))
	must(t, os.Symlink("../../etc", filepath.Join(src, "a", "link-dotdot")))
	skipped := []string{"link-out (a symbolic link leading outside the copied directory)",
		"a/link-dotdot (a symbolic link leading outside the copied directory)"}
	if mkfifo(filepath.Join(src, "fifo")) == nil {
		skipped = append(skipped, "fifo (a FIFO is not a file)")
	}
	if runtime.GOOS != "windows" {
		must(t, os.Mkdir(filepath.Join(src, "locked"), 0o755))
		write("locked/inside", []byte("x"), 0o644)
		must(t, os.Chmod(filepath.Join(src, "locked"), 0o555))
		t.Cleanup(func() { os.Chmod(filepath.Join(dst, "x", "y", "copy", "locked"), 0o755) })
	}
	roots := New([]string{src, dst})
	srcRoot, srcRel, err := roots.Resolve(src)
	must(t, err)
	defer srcRoot.Close()
	dstRoot, dstRel, err := roots.Resolve(filepath.Join(dst, "x", "y", "copy"))
	must(t, err)
	defer dstRoot.Close()

	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	allocated := mem.TotalAlloc
	pr, pw := io.Pipe()
	written := make(chan Stats, 1)
	go func() {
		st, err := WriteTar(context.Background(), pw, srcRoot, srcRel)
		pw.CloseWithError(err)
		written <- st
	}()
	xs, err := ExtractTar(context.Background(), pr, dstRoot, dstRel, 21<<20)
	must(t, err)
	ws := <-written
	runtime.ReadMemStats(&mem)
	// Streamed through fixed buffers: the 20 MiB file never is in memory whole, nor near.
	if a := mem.TotalAlloc - allocated; a > 4<<20 {
		t.Errorf("the copy allocated %d bytes", a)
	}
	if ws.Files != 6 || xs.Files != 6 || ws.Bytes != xs.Bytes || ws.Bytes != int64(len(big))+4+18+2+1 {
		t.Errorf("written %+v, extracted %+v", ws, xs)
	}
	slices.Sort(skipped)
	slices.Sort(ws.Skipped)
	if !slices.Equal(ws.Skipped, skipped) || ws.SkippedCount != len(skipped) || xs.SkippedCount != 0 {
		t.Errorf("skipped %q (%d), want %q", ws.Skipped, ws.SkippedCount, skipped)
	}
	want, got := tree(t, src), tree(t, filepath.Join(dst, "x", "y", "copy"))
	for _, name := range []string{"link-out", "a/link-dotdot", "fifo"} {
		delete(want, name)
	}
	want["."] = got["."] // the destination's own mode comes from "./"; t.TempDir's is 0700
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %q, want %q", name, got[name], w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("extra %s", name)
		}
	}
	if info, err := os.Stat(filepath.Join(dst, "x", "y", "copy", "run.sh")); err != nil || info.Mode().Perm()&0o111 == 0 {
		t.Errorf("run.sh is not executable: %v %v", info, err)
	}
	assertNoTemp(t, dst)
}

type entry struct {
	name, link, body string
	typ              byte
}

// archive is a tar of entries; cut leaves out the end blocks.
func archive(t *testing.T, entries []entry, cut bool) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		must(t, tw.WriteHeader(&tar.Header{Name: e.name, Linkname: e.link, Typeflag: typ, Size: int64(len(e.body)), Mode: 0o644, Format: tar.FormatPAX}))
		_, err := tw.Write([]byte(e.body))
		must(t, err)
	}
	if cut {
		must(t, tw.Flush())
	} else {
		must(t, tw.Close())
	}
	return b.Bytes()
}

func TestExtractTarRefused(t *testing.T) {
	big := strings.Repeat("x", 600)
	tests := []struct {
		name    string
		entries []entry
		cut     bool
		merge   bool // into an existing directory with a non-empty "d"
		wantErr error
	}{
		{name: "dot-dot", entries: []entry{{name: "ok"}, {name: "../x"}}, wantErr: ErrUnsafeEntry},
		{name: "dot-dot inside a name", entries: []entry{{name: "a/../../x"}}, wantErr: ErrUnsafeEntry},
		{name: "dot-dot that would stay inside", entries: []entry{{name: "a/../x"}}, wantErr: ErrUnsafeEntry},
		{name: "absolute", entries: []entry{{name: "ok"}, {name: "/tmp/x"}}, wantErr: ErrUnsafeEntry},
		{name: "through an earlier link", entries: []entry{{name: "sub/", typ: tar.TypeDir}, {name: "l", link: "sub", typ: tar.TypeSymlink}, {name: "l/x"}}, wantErr: ErrUnsafeEntry},
		{name: "a hard link out", entries: []entry{{name: "h", link: "../x", typ: tar.TypeLink}}, wantErr: ErrUnsafeEntry},
		{name: "a file as the destination", entries: []entry{{name: ".", typ: tar.TypeReg}}, wantErr: ErrUnsafeEntry},
		{name: "beyond the bound", entries: []entry{{name: "a", body: big}, {name: "b", body: big}}, wantErr: ErrTooLarge},
		{name: "beyond the bound when merging", merge: true, entries: []entry{{name: "a", body: big}, {name: "b", body: big}}, wantErr: ErrTooLarge},
		{name: "truncated", entries: []entry{{name: "a", body: "x"}}, cut: true, wantErr: ErrBadArchive},
		{name: "empty", entries: nil, wantErr: ErrBadArchive},
		{name: "a file over a full directory", merge: true, entries: []entry{{name: "new"}, {name: "d"}}, wantErr: ErrDirInTheWay},
		{name: "dot-dot when merging", merge: true, entries: []entry{{name: "ok"}, {name: "../x"}}, wantErr: ErrUnsafeEntry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := realTempDir(t)
			allowed := filepath.Join(base, "allowed")
			must(t, os.MkdirAll(filepath.Join(allowed, "dest", "d"), 0o755))
			must(t, os.WriteFile(filepath.Join(allowed, "dest", "d", "f"), []byte("kept"), 0o644))
			rel := filepath.Join("new", "dest")
			if tt.merge {
				rel = "dest"
			}
			root, err := os.OpenRoot(allowed)
			must(t, err)
			defer root.Close()
			before := snapshot(t, base)
			_, err = ExtractTar(context.Background(), bytes.NewReader(archive(t, tt.entries, tt.cut)), root, rel, 1000)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			assertSame(t, before, snapshot(t, base))
		})
	}
}

func TestExtractTarMerge(t *testing.T) {
	dir := realTempDir(t)
	must(t, os.MkdirAll(filepath.Join(dir, "a", "emptied"), 0o755))
	for name, body := range map[string]string{"keep": "kept", "a/old": "old", "a/replaced": "before", "was-file": "f"} {
		must(t, os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), []byte(body), 0o644))
	}
	must(t, os.Symlink("keep", filepath.Join(dir, "was-link")))
	root, err := os.OpenRoot(dir)
	must(t, err)
	defer root.Close()
	data := archive(t, []entry{{name: "./", typ: tar.TypeDir}, {name: "a/replaced", body: "after"}, {name: "a/emptied", body: "now a file"},
		{name: "was-file/inner", body: "now a dir"}, {name: "was-link", body: "now a file"}, {name: "new", body: "new"},
		{name: "out", link: "/etc/passwd", typ: tar.TypeSymlink}}, false)
	st, err := ExtractTar(context.Background(), bytes.NewReader(data), root, ".", 1000)
	must(t, err)
	if st.Files != 5 || st.SkippedCount != 1 || st.Skipped[0] != "out (a symbolic link leading outside the destination)" {
		t.Errorf("stats %+v", st)
	}
	for name, want := range map[string]string{"keep": "kept", "a/old": "old", "a/replaced": "after", "a/emptied": "now a file",
		"was-file/inner": "now a dir", "was-link": "now a file", "new": "new"} {
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name))); err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", name, b, err, want)
		}
	}
	if info, err := os.Lstat(filepath.Join(dir, "was-link")); err != nil || !info.Mode().IsRegular() {
		t.Errorf("was-link: %v %v", info, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "out")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the link out was made: %v", err)
	}
	assertNoTemp(t, dir)
}

// TestExtractTarNoGroupWrite: a sandbox's world-writable files and directories arrive on the
// host writable by their owner alone.
func TestExtractTarNoGroupWrite(t *testing.T) {
	dir := realTempDir(t)
	root, err := os.OpenRoot(dir)
	must(t, err)
	defer root.Close()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, h := range []*tar.Header{
		{Name: "open/", Typeflag: tar.TypeDir, Mode: 0o777},
		{Name: "open/f", Typeflag: tar.TypeReg, Mode: 0o666, Size: 1},
		{Name: "open/x", Typeflag: tar.TypeReg, Mode: 0o4777, Size: 1},
		{Name: "ro/", Typeflag: tar.TypeDir, Mode: 0o575},
	} {
		must(t, tw.WriteHeader(h))
		if h.Size > 0 {
			_, err := tw.Write([]byte("x"))
			must(t, err)
		}
	}
	must(t, tw.Close())
	_, err = ExtractTar(context.Background(), &b, root, "copy", 1000)
	must(t, err)
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, "copy", "ro"), 0o755) })
	for name, want := range map[string]fs.FileMode{"open": 0o755, "open/f": 0o644, "open/x": 0o755, "ro": 0o555} {
		if info, err := os.Lstat(filepath.Join(dir, "copy", filepath.FromSlash(name))); err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", name, info.Mode().Perm(), err, want)
		}
	}
}

func TestTarConfinement(t *testing.T) {
	root, _, _ := fixture(t)
	ctx := context.Background()
	data := archive(t, []entry{{name: "f", body: "x"}}, false)
	tests := []struct {
		name    string
		run     func() error
		wantErr error
	}{
		{name: "write a linked directory out", run: func() error { _, err := WriteTar(ctx, io.Discard, root, "dir-out"); return err }, wantErr: ErrOutside},
		{name: "write dot-dot", run: func() error { _, err := WriteTar(ctx, io.Discard, root, ".."); return err }, wantErr: ErrOutside},
		{name: "write a file", run: func() error { _, err := WriteTar(ctx, io.Discard, root, "file"); return err }, wantErr: ErrNotDir},
		{name: "extract into a link out", run: func() error { _, err := ExtractTar(ctx, bytes.NewReader(data), root, "dir-out", 10); return err }, wantErr: ErrSymlink},
		{name: "extract through a linked parent out", run: func() error {
			_, err := ExtractTar(ctx, bytes.NewReader(data), root, filepath.Join("dir-out", "new"), 10)
			return err
		}, wantErr: ErrOutside},
		{name: "extract into a file", run: func() error { _, err := ExtractTar(ctx, bytes.NewReader(data), root, "file", 10); return err }, wantErr: ErrNotDir},
		{name: "extract after the context ends", run: func() error {
			done, cancel := context.WithCancel(ctx)
			cancel()
			_, err := ExtractTar(done, bytes.NewReader(data), root, "new", 10)
			return err
		}, wantErr: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
		})
	}
}
