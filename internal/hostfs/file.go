package hostfs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// bufSize is the one buffer each copy streams through, whatever the file's size.
const bufSize = 32 << 10

// noWrite is what a file or directory written on the host never grants: group and other
// write. What comes from a sandbox is the model's; other users of the host must not be
// able to change it (and through it whatever later reads it).
const noWrite fs.FileMode = 0o022

// tempPrefix marks what a copy writes before it is complete, so that a leftover (after a
// crash) is recognisable as the server's.
const tempPrefix = ".k8s-sandbox-mcp-"

// OpenFile opens rel for reading. A regular file comes with its size; a directory is only
// reported (rc nil, isDir true), for the caller to copy it with WriteTar. Anything else (a
// device, a FIFO, a socket) is refused: reading it could block forever or never end.
func OpenFile(root *os.Root, rel string) (rc io.ReadCloser, size int64, isDir bool, err error) {
	f, info, err := openRead(root, rel)
	if err != nil {
		return nil, 0, false, err
	}
	if info.IsDir() {
		f.Close()
		return nil, 0, true, nil
	}
	return f, info.Size(), false, nil
}

// openRead opens rel through the root without blocking on a FIFO and refuses what is
// neither a regular file nor a directory. The check is on the open file, so a name swapped
// after a caller's Lstat cannot slip something else in.
func openRead(root *os.Root, rel string) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, pathErr("opening", rel, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, pathErr("reading", rel, err)
	}
	if !info.Mode().IsRegular() && !info.IsDir() {
		f.Close()
		return nil, nil, fmt.Errorf("%q is %s: %w; only files and directories can be copied", rel, typeName(info.Mode()), ErrNotRegular)
	}
	return f, info, nil
}

// File is a host file being written: its bytes go to a temporary name in the same
// directory, which Commit renames into place; until then the destination is untouched.
type File struct {
	root      *os.Root
	f         *os.File
	rel, tmp  string
	perm      fs.FileMode
	madeDirs  []string // parents CreateFile made, deepest last; Abort removes them
	committed bool
}

// CreateFile starts writing rel with permissions perm (less noWrite), making missing parent directories.
// The caller calls Commit once every byte is written, and defers Abort, which after a
// Commit does nothing. An existing file is replaced; a directory or a symbolic link at rel
// is refused, so that a write never lands where the name does not say.
func CreateFile(root *os.Root, rel string, perm fs.FileMode) (*File, error) {
	if info, err := root.Lstat(rel); err == nil {
		switch {
		case info.IsDir():
			return nil, fmt.Errorf("%q: %w; give a file name inside it", rel, ErrIsDir)
		case info.Mode()&fs.ModeSymlink != 0:
			return nil, fmt.Errorf("%q: %w; copy to the path it points to instead", rel, ErrSymlink)
		case !info.Mode().IsRegular():
			return nil, fmt.Errorf("%q is %s: %w", rel, typeName(info.Mode()), ErrNotRegular)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, pathErr("checking", rel, err)
	}
	made, err := makeParents(root, filepath.Dir(rel))
	if err != nil {
		return nil, err
	}
	w := &File{root: root, rel: rel, perm: perm.Perm() &^ noWrite, madeDirs: made}
	if w.tmp, err = tempName(filepath.Dir(rel), filepath.Base(rel)); err == nil {
		w.f, err = root.OpenFile(w.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	}
	if err != nil {
		w.Abort()
		return nil, pathErr("creating", rel, err)
	}
	return w, nil
}

func (w *File) Write(p []byte) (int, error) { return w.f.Write(p) }

// Commit gives the file its permissions, flushes it to disk and renames it into place.
func (w *File) Commit() error {
	err := w.f.Chmod(w.perm)
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.root.Rename(w.tmp, w.rel)
	}
	if err != nil {
		w.Abort()
		return pathErr("writing", w.rel, err)
	}
	w.committed = true
	return nil
}

// Abort removes what the write left: the temporary file and the directories it made.
func (w *File) Abort() {
	if w.committed {
		return
	}
	if w.f != nil {
		w.f.Close()
		_ = w.root.Remove(w.tmp)
	}
	removeMade(w.root, w.madeDirs)
	w.madeDirs = nil
}

// makeParents makes dir and its missing parents, returning those it made, outermost first.
func makeParents(root *os.Root, dir string) ([]string, error) {
	var missing []string
	for d := dir; d != "." && d != string(filepath.Separator); d = filepath.Dir(d) {
		info, err := root.Stat(d)
		if err == nil {
			if !info.IsDir() {
				return nil, fmt.Errorf("%q: %w", d, ErrNotDir)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, pathErr("checking", d, err)
		}
		missing = append(missing, d)
	}
	var made []string
	for i := len(missing) - 1; i >= 0; i-- {
		if err := root.Mkdir(missing[i], 0o755); err != nil {
			removeMade(root, made)
			return nil, pathErr("creating directory", missing[i], err)
		}
		made = append(made, missing[i])
	}
	return made, nil
}

// removeMade removes directories made, deepest first, best effort: only while empty.
func removeMade(root *os.Root, made []string) {
	for i := len(made) - 1; i >= 0; i-- {
		_ = root.Remove(made[i])
	}
}

// tempName is a fresh hidden name in dir for what will become base.
func tempName(dir, base string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	if len(base) > 100 {
		base = base[:100] // a name has at most 255 bytes; the marker needs room
	}
	return filepath.Join(dir, "."+base+tempPrefix+hex.EncodeToString(b[:])+".partial"), nil
}
