package hostfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// fixture is an allowed directory "in" with a file, a directory, links inside and out, and
// a directory "out" beside it that nothing may reach.
func fixture(t *testing.T) (root *os.Root, in, out string) {
	t.Helper()
	base := realTempDir(t)
	in, out = filepath.Join(base, "in"), filepath.Join(base, "out")
	for _, d := range []string{in, out, filepath.Join(in, "dir")} {
		must(t, os.Mkdir(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(in, "file"), []byte("inside"), 0o644))
	must(t, os.WriteFile(filepath.Join(out, "secret"), []byte("outside"), 0o644))
	must(t, os.Symlink("file", filepath.Join(in, "link-in")))
	must(t, os.Symlink(filepath.Join(out, "secret"), filepath.Join(in, "link-out")))
	must(t, os.Symlink("../out/secret", filepath.Join(in, "link-dotdot")))
	must(t, os.Symlink(out, filepath.Join(in, "dir-out")))
	root, rel, err := New([]string{in}).Resolve(in)
	must(t, err)
	if rel != "." {
		t.Fatalf("rel %q", rel)
	}
	t.Cleanup(func() { root.Close() })
	return root, in, out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpenFile(t *testing.T) {
	root, in, _ := fixture(t)
	hasFIFO := mkfifo(filepath.Join(in, "fifo")) == nil
	tests := []struct {
		name, rel string
		want      string
		wantDir   bool
		wantErr   error
	}{
		{name: "a file", rel: "file", want: "inside"},
		{name: "a directory", rel: "dir", wantDir: true},
		{name: "a link that stays inside", rel: "link-in", want: "inside"},
		{name: "an absolute link out", rel: "link-out", wantErr: ErrOutside},
		{name: "a relative link out", rel: "link-dotdot", wantErr: ErrOutside},
		{name: "through a linked parent out", rel: "dir-out/secret", wantErr: ErrOutside},
		{name: "dot-dot", rel: "../out/secret", wantErr: ErrOutside},
		{name: "missing", rel: "nope", wantErr: fs.ErrNotExist},
		{name: "a FIFO does not block", rel: "fifo", wantErr: ErrNotRegular},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.rel == "fifo" && !hasFIFO {
				t.Skip("no FIFOs")
			}
			rc, size, isDir, err := OpenFile(root, tt.rel)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("OpenFile(%q) error %v, want %v", tt.rel, err, tt.wantErr)
				}
				return
			}
			must(t, err)
			if isDir != tt.wantDir {
				t.Fatalf("isDir %v", isDir)
			}
			if isDir {
				return
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			must(t, err)
			if string(b) != tt.want || size != int64(len(tt.want)) {
				t.Fatalf("read %q (size %d), want %q", b, size, tt.want)
			}
		})
	}
}

func TestCreateFile(t *testing.T) {
	tests := []struct {
		name, rel string
		commit    bool
		wantErr   error
	}{
		{name: "a new file", rel: "new", commit: true},
		{name: "in new directories", rel: filepath.Join("a", "b", "new"), commit: true},
		{name: "replacing a file", rel: "file", commit: true},
		{name: "dot-dot that stays inside", rel: filepath.Join("dir", "..", "new"), commit: true},
		{name: "aborted in new directories", rel: filepath.Join("a", "b", "new")},
		{name: "aborted over a file", rel: "file"},
		{name: "a directory", rel: "dir", wantErr: ErrIsDir},
		{name: "a link out", rel: "link-out", wantErr: ErrSymlink},
		{name: "a link inside", rel: "link-in", wantErr: ErrSymlink},
		{name: "through a linked parent out", rel: filepath.Join("dir-out", "secret"), wantErr: ErrOutside},
		{name: "a new file through a linked parent out", rel: filepath.Join("dir-out", "x", "new"), wantErr: ErrOutside},
		{name: "dot-dot", rel: filepath.Join("..", "out", "new"), wantErr: ErrOutside},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, in, out := fixture(t)
			before := snapshot(t, filepath.Dir(in))
			w, err := CreateFile(root, tt.rel, 0o755)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("CreateFile(%q) error %v, want %v", tt.rel, err, tt.wantErr)
				}
				assertSame(t, before, snapshot(t, filepath.Dir(in)))
				return
			}
			must(t, err)
			defer w.Abort()
			_, err = io.CopyBuffer(w, io.LimitReader(zeros{}, 100_000), make([]byte, 1000))
			must(t, err)
			if !tt.commit {
				w.Abort()
				assertSame(t, before, snapshot(t, filepath.Dir(in)))
				return
			}
			must(t, w.Commit())
			info, err := os.Lstat(filepath.Join(in, tt.rel))
			must(t, err)
			if info.Size() != 100_000 || (runtime.GOOS != "windows" && info.Mode() != 0o755) {
				t.Errorf("%s: size %d, mode %v", tt.rel, info.Size(), info.Mode())
			}
			if b, _ := os.ReadFile(filepath.Join(out, "secret")); string(b) != "outside" {
				t.Errorf("outside file changed: %q", b)
			}
			assertNoTemp(t, in)
		})
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// snapshot is every path under dir with its type and size, links not followed.
func snapshot(t *testing.T, dir string) map[string]string {
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
		m[p] = info.Mode().String()
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m[p] += " " + string(b)
		}
		return nil
	}))
	return m
}

func assertSame(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, v := range after {
		if before[p] != v {
			t.Errorf("%s: %q, was %q", p, v, before[p])
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s is gone", p)
		}
	}
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && filepath.Ext(p) == ".partial" {
			t.Errorf("left behind: %s", p)
		}
		return err
	}))
}
