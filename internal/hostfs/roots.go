// Package hostfs is the server's confined access to host files, for copies between the host
// and a sandbox: only directories the operator allows (K8S_SANDBOX_HOST_PATHS), and every
// file reached through an os.Root, which refuses any name, ".." or symbolic link (even one
// swapped in during a copy) that leads out of its directory. Files and archives are streamed
// through fixed buffers, never held whole in memory.
package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Setting is the variable that lists the allowed directories; errors name it so that the
// model can tell the user what to change.
const Setting = "K8S_SANDBOX_HOST_PATHS"

// Errors the copy tools turn into advice.
var (
	ErrNotAllowed = errors.New("the host path is outside the directories this server may use")
	ErrOutside    = errors.New("the host path leads outside its allowed directory through a symbolic link or \"..\"")
	ErrNotDir     = errors.New("the host path is not a directory")
	ErrIsDir      = errors.New("the host path is a directory")
	ErrNotRegular = errors.New("the host path is not a regular file")
	ErrSymlink    = errors.New("the host path is a symbolic link")
)

// CheckDir is the rule for an allowed directory: absolute, existing, a directory. It returns
// the directory with its symbolic links resolved, which is what Resolve compares with, so a
// link moved later cannot move the allowed tree.
func CheckDir(dir string) (string, error) {
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%q is not an absolute path", dir)
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("%q cannot be used: %w", dir, err)
	}
	info, err := os.Stat(resolved)
	if err != nil {
		return "", fmt.Errorf("%q cannot be used: %w", dir, err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("%q is not a directory", dir)
	}
	return resolved, nil
}

// Roots are the allowed directories.
type Roots struct {
	dirs []string
}

// New takes directories CheckDir accepted; no directory allows nothing.
func New(dirs []string) *Roots {
	return &Roots{dirs: append([]string(nil), dirs...)}
}

// Dirs are the allowed directories.
func (r *Roots) Dirs() []string { return append([]string(nil), r.dirs...) }

// Enabled is whether any directory is allowed (the copy tools exist only then).
func (r *Roots) Enabled() bool { return r != nil && len(r.dirs) > 0 }

// Resolve finds the allowed directory hostPath is in, lexically, and opens it as an os.Root:
// rel is hostPath inside it ("." for the directory itself). Symbolic links are left to the
// os.Root, which follows only those that stay inside. The caller closes root.
func (r *Roots) Resolve(hostPath string) (root *os.Root, rel string, err error) {
	if !r.Enabled() {
		return nil, "", fmt.Errorf("%w: no host directory is allowed; the operator must list some in %s", ErrNotAllowed, Setting)
	}
	if !filepath.IsAbs(hostPath) {
		return nil, "", fmt.Errorf("host path %q is not absolute: give a full path inside one of %s", hostPath, r.allowed())
	}
	p := filepath.Clean(hostPath)
	best, bestRel := "", ""
	for _, d := range r.dirs {
		rel, err := filepath.Rel(d, p)
		// The longest match wins, so that a nested allowed directory is its own root.
		if err == nil && filepath.IsLocal(rel) && len(d) > len(best) {
			best, bestRel = d, rel
		}
	}
	if best == "" {
		return nil, "", fmt.Errorf("host path %q: %w; use a path inside %s (set by %s)", hostPath, ErrNotAllowed, r.allowed(), Setting)
	}
	root, err = os.OpenRoot(best)
	if err != nil {
		return nil, "", fmt.Errorf("opening the allowed directory %q: %w", best, err)
	}
	return root, bestRel, nil
}

func (r *Roots) allowed() string { return strings.Join(r.dirs, ", ") }

// pathErr wraps an error of an os.Root operation on rel, with advice where there is one.
func pathErr(op, rel string, err error) error {
	switch {
	case escapes(err):
		return fmt.Errorf("%s %q: %w (%w)", op, rel, ErrOutside, err)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %q: %w; check the path (list the directory on the host)", op, rel, err)
	}
	return fmt.Errorf("%s %q: %w", op, rel, err)
}

// escapes reports an os.Root refusal to leave its directory. The os package does not export
// that error, so its text is the only way to tell it from other failures.
func escapes(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}
