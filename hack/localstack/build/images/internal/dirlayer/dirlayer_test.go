package dirlayer

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

type entry struct {
	typ      byte
	mode     int64
	uid, gid int
	size     int64
	link     string
}

func tree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755))
	must(os.WriteFile(filepath.Join(root, "usr/bin/tool"), []byte("#!/bin/sh\n"), 0o755))
	must(os.Chmod(filepath.Join(root, "usr/bin/tool"), 0o755|os.ModeSetuid))
	must(os.Link(filepath.Join(root, "usr/bin/tool"), filepath.Join(root, "usr/bin/tool2")))
	must(os.Symlink("usr/bin", filepath.Join(root, "bin")))
	must(os.Mkdir(filepath.Join(root, "tmp"), 0o755))
	must(os.Chmod(filepath.Join(root, "tmp"), 0o777|os.ModeSticky))
	must(os.MkdirAll(filepath.Join(root, "workspace/sub"), 0o755))
	must(os.WriteFile(filepath.Join(root, "workspace/sub/f"), []byte("data"), 0o600))
	return root
}

func read(t *testing.T, b []byte) ([]string, map[string]entry) {
	t.Helper()
	var names []string
	got := map[string]entry{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names, got
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(Epoch) {
			t.Errorf("%s: mtime %v, want %v", h.Name, h.ModTime, Epoch)
		}
		names = append(names, h.Name)
		got[h.Name] = entry{h.Typeflag, h.Mode, h.Uid, h.Gid, h.Size, h.Linkname}
	}
}

func TestWrite(t *testing.T) {
	root := tree(t)
	var b bytes.Buffer
	if err := Write(&b, root, Owners{"/workspace": {1000, 1000}}); err != nil {
		t.Fatal(err)
	}
	names, got := read(t, b.Bytes())
	wantOrder := []string{"bin", "tmp/", "usr/", "usr/bin/", "usr/bin/tool", "usr/bin/tool2",
		"workspace/", "workspace/sub/", "workspace/sub/f"}
	if len(names) != len(wantOrder) {
		t.Fatalf("entries %q, want %q", names, wantOrder)
	}
	for i := range names {
		if names[i] != wantOrder[i] {
			t.Fatalf("entries %q, want %q", names, wantOrder)
		}
	}
	for name, want := range map[string]entry{
		"bin":             {typ: tar.TypeSymlink, mode: 0o777, link: "usr/bin"},
		"tmp/":            {typ: tar.TypeDir, mode: 0o1777},
		"usr/bin/tool":    {typ: tar.TypeReg, mode: 0o4755, size: 10},
		"usr/bin/tool2":   {typ: tar.TypeLink, mode: 0o4755, link: "usr/bin/tool"},
		"workspace/":      {typ: tar.TypeDir, mode: 0o755, uid: 1000, gid: 1000},
		"workspace/sub/f": {typ: tar.TypeReg, mode: 0o600, uid: 1000, gid: 1000, size: 4},
	} {
		if got[name] != want {
			t.Errorf("%s = %+v, want %+v", name, got[name], want)
		}
	}
}

func TestWriteIgnoresTimesAndDiskOwners(t *testing.T) {
	root := tree(t)
	var a, b bytes.Buffer
	if err := Write(&a, root, nil); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	f := filepath.Join(root, "workspace/sub/f")
	if err := os.Chtimes(f, later, later); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Lchown(f, 4242, 4242); err != nil {
			t.Fatal(err)
		}
	}
	if err := Write(&b, root, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("same tree, new mtime (and owner on disk): the layer changed")
	}
}

func TestWriteRefusesSpecialFiles(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	err := Write(io.Discard, root, nil)
	want := "layer of " + root + ": " + filepath.Join(root, "fifo") + ": p--------- files cannot go into a layer"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestParseOwner(t *testing.T) {
	for _, tc := range []struct {
		in, path string
		owner    Owner
		err      string
	}{
		{in: "/workspace=1000:1000", path: "/workspace", owner: Owner{1000, 1000}},
		{in: "/app/=1000:2000", path: "/app", owner: Owner{1000, 2000}},
		{in: "app=1000:1000", err: `owner "app=1000:1000": want /PATH=UID:GID, e.g. /workspace=1000:1000`},
		{in: "/app=1000", err: `owner "/app=1000": want /PATH=UID:GID, e.g. /workspace=1000:1000`},
		{in: "/app=x:1", err: `owner "/app=x:1": uid and gid must be non-negative numbers`},
	} {
		p, o, err := ParseOwner(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseOwner(%q) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || p != tc.path || o != tc.owner {
			t.Errorf("ParseOwner(%q) = %q, %v, %v; want %q, %v", tc.in, p, o, err, tc.path, tc.owner)
		}
	}
}
