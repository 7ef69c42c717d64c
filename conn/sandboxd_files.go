package conn

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// files sends one request to sandboxd's REST API at /v1/files/<path, fully encoded>. A body
// (nil for none) is sent as a file's bytes; size is its length, -1 when unknown.
func (s *sandboxdConn) files(ctx context.Context, t Target, op, method, file string, body io.Reader, size int64) (*http.Response, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%s: connection is closed", op)
	}
	host, err := s.host(t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	url := "http://" + hostPort(host, s.restPort) + "/v1/files/" + escapePath(file)
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, fmt.Errorf("%s: building request: %w", op, err)
	}
	if body != nil {
		// An empty file says what it is too: sandboxd reads a multipart/form-data body as a
		// form and anything else as the file, and the wire should not depend on the size.
		req.Header.Set("Content-Type", "application/octet-stream")
		if size >= 0 {
			req.ContentLength = size
		}
		withReplay(req, body)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, transportError(ctx, op, err)
	}
	return resp, nil
}

func (s *sandboxdConn) Upload(ctx context.Context, t Target, dest string, r io.Reader) (int64, error) {
	op := fmt.Sprintf("upload %q", dest)
	if _, err := uploadPath(dest); err != nil {
		return 0, err
	}
	tr := startTransfer(ctx, defaultCallTimeout)
	defer tr.stop()
	src := newSource(tr, r)
	// The body is r itself, read as the request goes (sandboxd writes it to a temporary file
	// and renames it into place only once complete). The path goes as given: sandboxd maps
	// absolute paths under its root dir onto it.
	body, size := io.Reader(src), knownSize(r)
	if size == 0 {
		body = http.NoBody // "Content-Length: 0" as before; an unread reader would go chunked
	}
	resp, err := s.files(tr.ctx, t, op, http.MethodPut, dest, body, size)
	if err == nil {
		err = uploadStatus(op, resp)
	}
	return finishUpload(op, tr, src, err)
}

// uploadStatus reads an upload's answer.
func uploadStatus(op string, resp *http.Response) error {
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return nil
	}
	err := statusError(op, resp)
	if resp.StatusCode == http.StatusBadRequest && strings.Contains(err.Error(), "is a directory") {
		return fmt.Errorf("%w: %w", ErrIsDir, err)
	}
	return err
}

func (s *sandboxdConn) Download(ctx context.Context, t Target, file string, w io.Writer, maxBytes int64) (int64, error) {
	op := fmt.Sprintf("download %q", file)
	send, err := filePath(op, file)
	if err != nil {
		return 0, err
	}
	tr := startTransfer(ctx, defaultCallTimeout)
	defer tr.stop()
	resp, err := s.files(tr.ctx, t, op, http.MethodGet, send, nil, 0)
	if err != nil {
		return 0, tr.explain(op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, statusError(op, resp)
	}
	// Files are served as octet-stream; a JSON body is a directory listing.
	if isJSON(resp) {
		return 0, fmt.Errorf("%s: %w", op, ErrIsDir)
	}
	return copyDownload(op, tr, resp, w, downloadLimit(maxBytes, s.maxDownload))
}

func (s *sandboxdConn) List(ctx context.Context, t Target, dir string, maxEntries int) (Listing, error) {
	op := fmt.Sprintf("list %q", dir)
	send, err := filePath(op, dir)
	if err != nil {
		return Listing{}, err
	}
	ctx, cancel := withCallTimeout(ctx)
	defer cancel()
	resp, err := s.files(ctx, t, op, http.MethodGet, send, nil, 0)
	if err != nil {
		return Listing{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Listing{}, statusError(op, resp)
	}
	if !isJSON(resp) {
		return Listing{}, fmt.Errorf("%s: %w", op, ErrNotDir)
	}
	return decodeSandboxdListing(op, resp.Body, maxEntries)
}

func (s *sandboxdConn) Exists(ctx context.Context, t Target, file string) (bool, error) {
	op := fmt.Sprintf("exists %q", file)
	send, err := filePath(op, file)
	if err != nil {
		return false, err
	}
	ctx, cancel := withCallTimeout(ctx)
	defer cancel()
	resp, err := s.files(ctx, t, op, http.MethodHead, send, nil, 0)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return false, nil
	case resp.StatusCode/100 == 2:
		return true, nil
	}
	return false, statusError(op, resp)
}

func isJSON(resp *http.Response) bool {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}
