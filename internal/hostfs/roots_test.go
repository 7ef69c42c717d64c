package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// realTempDir is t.TempDir with its links resolved (macOS's /var is one), as CheckDir keeps it.
func realTempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCheckDir(t *testing.T) {
	base := realTempDir(t)
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(base, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, want, wantErr string
	}{
		{name: "a directory", dir: base, want: base},
		{name: "a link is kept resolved", dir: link, want: base},
		{name: "relative", dir: "some/dir", wantErr: `"some/dir" is not an absolute path`},
		{name: "missing", dir: filepath.Join(base, "nope"), wantErr: "cannot be used"},
		{name: "a file", dir: file, wantErr: "is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CheckDir(tt.dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("CheckDir(%q) = %q, %v; want an error with %q", tt.dir, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("CheckDir(%q) = %q, %v; want %q", tt.dir, got, err, tt.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	a, b := realTempDir(t), realTempDir(t)
	nested := filepath.Join(a, "nested")
	if err := os.Mkdir(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	roots := New([]string{a, b, nested})
	tests := []struct {
		name, path     string
		wantRoot, want string
		wantErr        error
		wantText       string
	}{
		{name: "the directory itself", path: a, wantRoot: a, want: "."},
		{name: "a file inside", path: filepath.Join(b, "x", "y.txt"), wantRoot: b, want: filepath.Join("x", "y.txt")},
		{name: "the nested allowed directory wins", path: filepath.Join(nested, "f"), wantRoot: nested, want: "f"},
		{name: "dot-dot that stays inside", path: a + "/x/../y", wantRoot: a, want: "y"},
		{name: "dot-dot that leaves", path: a + "/../etc/passwd", wantErr: ErrNotAllowed, wantText: "K8S_SANDBOX_HOST_PATHS"},
		{name: "outside", path: "/etc/passwd", wantErr: ErrNotAllowed, wantText: a + ", " + b},
		{name: "a prefix that is not a parent", path: a + "x/f", wantErr: ErrNotAllowed},
		{name: "relative", path: "x/y", wantText: "is not absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, rel, err := roots.Resolve(tt.path)
			if tt.wantErr != nil || tt.wantText != "" {
				if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) || !strings.Contains(err.Error(), tt.wantText) {
					t.Fatalf("Resolve(%q) error %v; want %v with %q", tt.path, err, tt.wantErr, tt.wantText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			if root.Name() != tt.wantRoot || rel != tt.want {
				t.Fatalf("Resolve(%q) = %q, %q; want %q, %q", tt.path, root.Name(), rel, tt.wantRoot, tt.want)
			}
		})
	}
	if _, _, err := New(nil).Resolve(a); !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), Setting) {
		t.Errorf("no allowed directory: %v", err)
	}
}
