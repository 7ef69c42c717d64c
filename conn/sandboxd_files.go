package conn

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// files sends one request to sandboxd's REST API at /v1/files/<path, fully encoded>.
func (s *sandboxdConn) files(ctx context.Context, t Target, op, method, file string, body []byte) (*http.Response, error) {
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
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	url := "http://" + hostPort(host, s.restPort) + "/v1/files/" + escapePath(file)
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, fmt.Errorf("%s: building request: %w", op, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, transportError(ctx, op, err)
	}
	return resp, nil
}

func (s *sandboxdConn) Upload(ctx context.Context, t Target, dest string, data []byte) error {
	op := fmt.Sprintf("upload %q", dest)
	if _, err := uploadPath(dest); err != nil {
		return err
	}
	ctx, cancel := withCallTimeout(ctx)
	defer cancel()
	if data == nil {
		data = []byte{} // a nil body would send no Content-Type; the file is still written empty
	}
	// The path goes as given: sandboxd maps absolute paths under its root dir onto it.
	resp, err := s.files(ctx, t, op, http.MethodPut, dest, data)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return nil
	}
	err = statusError(op, resp)
	if resp.StatusCode == http.StatusBadRequest && strings.Contains(err.Error(), "is a directory") {
		return fmt.Errorf("%w: %w", ErrIsDir, err)
	}
	return err
}

func (s *sandboxdConn) Download(ctx context.Context, t Target, file string, maxBytes int64) ([]byte, error) {
	op := fmt.Sprintf("download %q", file)
	send, err := filePath(op, file)
	if err != nil {
		return nil, err
	}
	ctx, cancel := withCallTimeout(ctx)
	defer cancel()
	resp, err := s.files(ctx, t, op, http.MethodGet, send, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(op, resp)
	}
	// Files are served as octet-stream; a JSON body is a directory listing.
	if isJSON(resp) {
		return nil, fmt.Errorf("%s: %w", op, ErrIsDir)
	}
	return readDownload(op, resp, downloadLimit(maxBytes, s.maxDownload))
}

func (s *sandboxdConn) List(ctx context.Context, t Target, dir string, maxEntries int) (Listing, error) {
	op := fmt.Sprintf("list %q", dir)
	send, err := filePath(op, dir)
	if err != nil {
		return Listing{}, err
	}
	ctx, cancel := withCallTimeout(ctx)
	defer cancel()
	resp, err := s.files(ctx, t, op, http.MethodGet, send, nil)
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
	resp, err := s.files(ctx, t, op, http.MethodHead, send, nil)
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
