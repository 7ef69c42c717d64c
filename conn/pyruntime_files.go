package conn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"path"
	"strings"
)

// runtimePath encodes a path for /download, /list and /exists. The runtime's handler
// URL-decodes the (already decoded) path parameter once more, so the path is encoded
// twice; otherwise a name such as "100%41" would be read as "100A".
func runtimePath(p string) string {
	return escapePath(escapePath(p))
}

func (p *pyConn) Upload(ctx context.Context, t Target, dest string, r io.Reader) (int64, error) {
	op := fmt.Sprintf("upload %q", dest)
	rel, err := uploadPath(dest)
	if err != nil {
		return 0, err
	}
	if strings.ContainsAny(rel, "\"\\") {
		// The name travels as a multipart filename, where these would need escaping
		// that the runtime's form parser does not reliably undo.
		return 0, fmt.Errorf("%s: the python runtime cannot store names containing '\"' or '\\'", op)
	}
	tr := startTransfer(ctx, defaultCallTimeout)
	defer tr.stop()
	// The v0.5.6 runtime opens the file without creating its parent directories.
	if dir := path.Dir(rel); dir != "." {
		if err := p.mkdirAll(tr.ctx, t, dir); err != nil {
			return 0, tr.explain(op, fmt.Errorf("%s: %w", op, err))
		}
	}
	head, tail, contentType, err := formFraming(rel)
	if err != nil {
		return 0, fmt.Errorf("%s: building form: %w", op, err)
	}
	src := newSource(tr, r)
	req := request{op: op, method: http.MethodPost, path: "/upload", contentType: contentType,
		body: &framed{head: head, tail: tail, src: src}}
	if n := knownSize(r); n >= 0 {
		req.size = int64(len(head)) + n + int64(len(tail))
	}
	resp, err := p.do(tr.ctx, t, req)
	if err == nil {
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			err = statusError(op, resp)
		}
	}
	return finishUpload(op, tr, src, err)
}

// framed is a form's body: its framing around the streamed content, replayable as the content is.
type framed struct {
	head, tail []byte
	src        *source
	r          io.Reader
}

func (f *framed) Read(p []byte) (int, error) {
	if f.r == nil {
		f.r = io.MultiReader(bytes.NewReader(f.head), f.src, bytes.NewReader(f.tail))
	}
	return f.r.Read(p)
}

func (f *framed) canReplay() bool { return f.src.canReplay() }

func (f *framed) replay() (io.Reader, error) {
	if _, err := f.src.replay(); err != nil {
		return nil, err
	}
	return io.MultiReader(bytes.NewReader(f.head), f.src, bytes.NewReader(f.tail)), nil
}

// formFraming is the multipart/form-data body of one "file" part named name, without its
// content: what goes before it and after it. The content then streams between the two (no
// goroutine feeding a pipe, and a Content-Length when the content's size is known), and the
// framing is still multipart.Writer's own.
func formFraming(name string) (head, tail []byte, contentType string, err error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename="%s"`, name))
	h.Set("Content-Type", "application/octet-stream")
	if _, err := mw.CreatePart(h); err != nil {
		return nil, nil, "", err
	}
	n := buf.Len()
	if err := mw.Close(); err != nil {
		return nil, nil, "", err
	}
	b := buf.Bytes()
	return b[:n:n], b[n:], mw.FormDataContentType(), nil
}

// mkdirScript creates the directory $1 one segment at a time under the working directory,
// refusing any existing segment that resolves outside it (a symlink such as `root -> /`).
// `mkdir -p` would follow such a link and create directories anywhere the sandbox user may.
// As the workspace scripts do, it enters each directory (cd -P) and checks where it landed
// before making the next one in it, so a directory swapped for a link meanwhile cannot lead
// the next mkdir out.
const mkdirScript = `set -f
base=$(pwd -P) || exit 1
IFS=/
for seg in $1; do
  [ -n "$seg" ] || continue
  if [ -e "$seg" ] || [ -L "$seg" ]; then
    [ -e "$seg" ] || { echo "dangling link" >&2; exit 3; }
    [ -d "$seg" ] || { echo "not a directory" >&2; exit 4; }
  else
    mkdir -- "$seg" || [ -d "$seg" ] || exit 1
  fi
  cd -P -- "$seg" || exit 1
  real=$(pwd -P) || exit 1
  case $real in "$base"|"$base"/*) ;; *) echo "outside the working directory" >&2; exit 3 ;; esac
done`

// mkdirAll creates dir (relative to the runtime's base directory) through /execute, only
// inside that directory.
func (p *pyConn) mkdirAll(ctx context.Context, t Target, dir string) error {
	resp, _, err := p.post(ctx, t, shJoin([]string{"/bin/sh", "-c", mkdirScript, "sh", dir}), 0)
	if err != nil {
		return fmt.Errorf("creating parent directory %q: %w", dir, err)
	}
	defer resp.Body.Close()
	var stderr strings.Builder
	code, err := decodeExecStream(io.LimitReader(resp.Body, maxErrorBody), io.Discard, &stderr)
	if err != nil {
		return fmt.Errorf("creating parent directory %q: %w", dir, err)
	}
	switch {
	case code != nil && *code == 3:
		return fmt.Errorf("parent directory %q: %w (it leads %s)", dir, ErrDenied, strings.TrimSpace(stderr.String()))
	case code != nil && *code == 4:
		return fmt.Errorf("parent directory %q: a part of it is a file, not a directory", dir)
	case code == nil || *code != 0:
		return fmt.Errorf("creating parent directory %q failed: %s", dir, scrubPaths(strings.TrimSpace(stderr.String())))
	}
	return nil
}

func (p *pyConn) Download(ctx context.Context, t Target, file string, w io.Writer, maxBytes int64) (int64, error) {
	op := fmt.Sprintf("download %q", file)
	send, err := filePath(op, file)
	if err != nil {
		return 0, err
	}
	tr := startTransfer(ctx, defaultCallTimeout)
	defer tr.stop()
	resp, err := p.do(tr.ctx, t, request{op: op, method: http.MethodGet, path: "/download/" + runtimePath(send)})
	if err != nil {
		return 0, tr.explain(op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		// The runtime answers "File not found" for directories too.
		notFound := statusError(op, resp)
		if ok, err := p.Exists(tr.ctx, t, file); err == nil && ok {
			return 0, fmt.Errorf("%s: %w", op, ErrIsDir)
		}
		return 0, notFound
	}
	if resp.StatusCode != http.StatusOK {
		return 0, statusError(op, resp)
	}
	return copyDownload(op, tr, resp, w, downloadLimit(maxBytes, p.maxDownload))
}

func (p *pyConn) List(ctx context.Context, t Target, dir string, maxEntries int) (Listing, error) {
	op := fmt.Sprintf("list %q", dir)
	send, err := filePath(op, dir)
	if err != nil {
		return Listing{}, err
	}
	ctx, cancel := withCallTimeout(ctx)
	defer cancel()
	resp, err := p.do(ctx, t, request{op: op, method: http.MethodGet, path: "/list/" + runtimePath(send)})
	if err != nil {
		return Listing{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		// "Path is not a directory" covers missing paths and files alike.
		msg := scrubPaths(errorMessage(resp))
		if ok, err := p.Exists(ctx, t, dir); err == nil && ok {
			return Listing{}, fmt.Errorf("%s: %w (HTTP 404: %s)", op, ErrNotDir, msg)
		}
		return Listing{}, fmt.Errorf("%s: %w (HTTP 404: %s)", op, ErrNotFound, msg)
	}
	if resp.StatusCode == http.StatusInternalServerError {
		// The runtime stats every entry following links, and one link that leads nowhere
		// fails the whole listing: list through /execute instead, without following.
		listErr := statusError(op, resp)
		l, err := p.listByExec(ctx, t, op, dir, maxEntries)
		if err != nil && !errors.Is(err, ErrDenied) && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrNotDir) {
			return Listing{}, fmt.Errorf("%w (listing through python3 instead failed too: %v)", listErr, err)
		}
		return l, err
	}
	if resp.StatusCode != http.StatusOK {
		return Listing{}, statusError(op, resp)
	}
	return decodeRuntimeListing(op, resp.Body, maxEntries)
}

// listScript lists the directory $1 as the runtime's /list does ([{name,size,type,mod_time}],
// links followed), but a link it cannot follow is listed as itself, type "symlink". The
// directory is opened first and checked where it is (/proc/self/fd), then listed through
// that descriptor, so a swap of a directory on the path cannot make it list another one.
// Exit 3: outside the working directory; 4: not found; 5: not a directory.
const listScript = `import json, os, stat, sys
base = os.path.realpath(os.getcwd())
try: fd = os.open(sys.argv[1].lstrip("/") or ".", os.O_RDONLY | os.O_DIRECTORY)
except FileNotFoundError: sys.exit(4)
except NotADirectoryError: sys.exit(5)
real = os.readlink("/proc/self/fd/%d" % fd)
if base != "/" and real != base and not real.startswith(base + "/"): sys.exit(3)
out = []
with os.scandir(fd) as it:
    for e in it:
        try:
            st = e.stat(); typ = "directory" if stat.S_ISDIR(st.st_mode) else "file"
        except OSError:
            st = e.stat(follow_symlinks=False); typ = "symlink"
        out.append({"name": e.name, "size": st.st_size, "type": typ, "mod_time": st.st_mtime})
json.dump(out, sys.stdout)
`

// listByExec lists dir with listScript, streaming its output into the listing decoder.
func (p *pyConn) listByExec(ctx context.Context, t Target, op, dir string, maxEntries int) (Listing, error) {
	resp, _, err := p.post(ctx, t, shJoin([]string{"python3", "-c", listScript, dir}), 0)
	if err != nil {
		return Listing{}, err
	}
	defer resp.Body.Close()
	pr, pw := io.Pipe()
	stderr := &LimitedBuffer{Max: 4 << 10}
	var code *int
	done := make(chan error, 1)
	go func() {
		c, err := decodeExecStream(resp.Body, pw, stderr)
		code = c
		pw.CloseWithError(err)
		done <- err
	}()
	l, lerr := decodeRuntimeListing(op, pr, maxEntries)
	pr.CloseWithError(errListed) // a writer still writing (a listing cut short) ends
	if err := <-done; err != nil {
		if lerr != nil {
			return Listing{}, lerr
		}
		return Listing{}, fmt.Errorf("%s: %w", op, err)
	}
	switch {
	case code == nil:
		return Listing{}, fmt.Errorf("%s: the listing ended without an exit code", op)
	case *code == 3:
		return Listing{}, fmt.Errorf("%s: %w (it leaves the sandbox's working directory)", op, ErrDenied)
	case *code == 4:
		return Listing{}, fmt.Errorf("%s: %w", op, ErrNotFound)
	case *code == 5:
		return Listing{}, fmt.Errorf("%s: %w", op, ErrNotDir)
	case *code != 0:
		return Listing{}, fmt.Errorf("%s: listing through python3 failed (exit code %d): %s", op, *code, scrubPaths(strings.TrimSpace(stderr.String())))
	}
	return l, lerr
}

// errListed ends listByExec's pipe once the listing is decoded.
var errListed = errors.New("listed")

func (p *pyConn) Exists(ctx context.Context, t Target, file string) (bool, error) {
	op := fmt.Sprintf("exists %q", file)
	send, err := filePath(op, file)
	if err != nil {
		return false, err
	}
	ctx, cancel := withCallTimeout(ctx)
	defer cancel()
	resp, err := p.do(ctx, t, request{op: op, method: http.MethodGet, path: "/exists/" + runtimePath(send)})
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, statusError(op, resp)
	}
	var out struct {
		Exists bool `json:"exists"`
	}
	if err := decodeJSON(op, resp.Body, maxSmallJSON, &out); err != nil {
		return false, err
	}
	return out.Exists, nil
}
