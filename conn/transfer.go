package conn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// transfer bounds one Upload or Download. A caller's own deadline is kept as it is. Without
// one, the other file calls get defaultCallTimeout in total (withCallTimeout), but a transfer
// gets it as an idle bound instead: a 1 GB file over a slow link may rightly take longer than
// any fixed total, while one where no byte moves for that long is stuck and is cancelled.
type transfer struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	idle   time.Duration
	timer  *time.Timer // nil when the caller's deadline bounds the transfer
}

func startTransfer(ctx context.Context, idle time.Duration) *transfer {
	ctx, cancel := context.WithCancelCause(ctx)
	tr := &transfer{ctx: ctx, cancel: cancel, idle: idle}
	if _, ok := ctx.Deadline(); !ok {
		tr.timer = time.AfterFunc(idle, func() { cancel(stallError{idle}) })
	}
	return tr
}

// moved pushes the idle bound back: bytes went through.
func (tr *transfer) moved() {
	if tr.timer != nil {
		tr.timer.Reset(tr.idle)
	}
}

func (tr *transfer) stop() {
	if tr.timer != nil {
		tr.timer.Stop()
	}
	tr.cancel(nil)
}

// explain replaces the bare "context canceled" a stalled transfer fails with by the stall.
func (tr *transfer) explain(op string, err error) error {
	var stall stallError
	if err != nil && errors.As(context.Cause(tr.ctx), &stall) && !errors.As(err, &stall) {
		return fmt.Errorf("%s: %w", op, stall)
	}
	return err
}

// stallError is a transfer cancelled for idleness. It is a deadline like the total bound of
// the other calls, so callers that handle one handle both.
type stallError struct{ idle time.Duration }

func (e stallError) Error() string {
	return fmt.Sprintf("transfer stalled: no data moved for %s", e.idle)
}

func (e stallError) Unwrap() error { return context.DeadlineExceeded }

// watch passes r through, pushing the idle bound back on every read that moved bytes.
func (tr *transfer) watch(r io.Reader) io.Reader {
	return readerFunc(func(p []byte) (int, error) {
		n, err := r.Read(p)
		if n > 0 {
			tr.moved()
		}
		return n, err
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// errSourceDone is what the transport reads after Upload has returned.
var errSourceDone = errors.New("upload finished")

// source is the caller's reader as an upload sends it. It counts the bytes and keeps the
// reader's own error, so that a failing reader is reported as such and not as the broken
// request it causes. finish stops reading it: an HTTP transport may go on reading (and
// closes) a request body after the response came, and the caller's reader is the caller's
// again once Upload returns.
type source struct {
	tr    *transfer
	r     io.Reader
	start int64 // where an in-memory r began, for replay; -1: it cannot be replayed

	mu   sync.Mutex // held across a read, so that finish waits one out
	n    int64
	err  error
	done bool
}

func newSource(tr *transfer, r io.Reader) *source {
	s := &source{tr: tr, r: r, start: -1}
	switch v := r.(type) {
	case nil:
		s.r = http.NoBody
	case *bytes.Buffer: // its unread bytes, as a reader that can start again
		s.r, s.start = bytes.NewReader(v.Bytes()), 0
	case *bytes.Reader:
		s.start, _ = v.Seek(0, io.SeekCurrent)
	case *strings.Reader:
		s.start, _ = v.Seek(0, io.SeekCurrent)
	}
	return s
}

// replayable is a request body that can be sent again. net/http retries a request whose
// reused connection turned out closed before anything was written only when it can get the
// body again (GetBody); the byte-slice uploads of before had that through bytes.Reader, and
// in-memory uploads (the model's files) keep it.
type replayable interface {
	canReplay() bool
	replay() (io.Reader, error)
}

// withReplay lets req's transport send body again where it can.
func withReplay(req *http.Request, body io.Reader) {
	if rb, ok := body.(replayable); ok && rb.canReplay() {
		req.GetBody = func() (io.ReadCloser, error) {
			r, err := rb.replay()
			if err != nil {
				return nil, err
			}
			return io.NopCloser(r), nil
		}
	}
}

func (s *source) canReplay() bool {
	_, ok := s.r.(io.Seeker)
	return ok && s.start >= 0
}

// replay starts an in-memory source again from where it began.
func (s *source) replay() (io.Reader, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seeker, ok := s.r.(io.Seeker)
	if s.done || s.start < 0 || !ok {
		return nil, errors.New("the upload's data cannot be sent again")
	}
	if _, err := seeker.Seek(s.start, io.SeekStart); err != nil {
		return nil, err
	}
	s.n = 0
	return s, nil
}

func (s *source) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return 0, errSourceDone
	}
	n, err := s.r.Read(p)
	s.n += int64(n)
	if n > 0 {
		s.tr.moved()
	}
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

// finish returns the bytes read and the reader's error; nothing reads it afterwards.
func (s *source) finish() (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	return s.n, s.err
}

// knownSize is the length of an in-memory reader, as http.NewRequest finds it, so that the
// request still carries a Content-Length through the source wrapper; -1 when unknown (the
// body then goes chunked).
func knownSize(r io.Reader) int64 {
	switch v := r.(type) {
	case *bytes.Reader:
		return int64(v.Len())
	case *bytes.Buffer:
		return int64(v.Len())
	case *strings.Reader:
		return int64(v.Len())
	}
	return -1
}

// finishUpload settles an upload: the reader's own failure first (whatever the request did
// with it), then the request's error, then the stall that may lie behind either.
func finishUpload(op string, tr *transfer, src *source, err error) (int64, error) {
	n, srcErr := src.finish()
	if srcErr != nil {
		return n, fmt.Errorf("%s: reading the data: %w", op, srcErr)
	}
	if err != nil {
		return n, tr.explain(op, err)
	}
	return n, nil
}

// downloadLimit is the effective Download bound: the call's, else the configured one. Downloads
// stream, so the configured bound (K8S_SANDBOX_MAX_DOWNLOAD_BYTES) guards the model's tools
// through the bound they pass, not the server's memory; a copy or transfer passes its own.
func downloadLimit(call, configured int64) int64 {
	switch {
	case call > 0:
		return call
	case configured > 0:
		return configured
	}
	return DefaultMaxDownloadBytes
}

// copyDownload copies a file body into w, refusing more than limit bytes with ErrTooLarge:
// before writing anything when the Content-Length says so, else once the limit is passed (w
// then holds the first limit bytes).
func copyDownload(op string, tr *transfer, resp *http.Response, w io.Writer, limit int64) (int64, error) {
	if resp.ContentLength > limit {
		return 0, fmt.Errorf("%s: %w: %d bytes, the limit is %d", op, ErrTooLarge, resp.ContentLength, limit)
	}
	if e, ok := w.(Expecter); ok && resp.ContentLength >= 0 {
		if err := e.Expect(resp.ContentLength); err != nil {
			return 0, fmt.Errorf("%s: %w", op, err)
		}
	}
	sink := &sinkWriter{w: w}
	_, err := io.Copy(sink, &capReader{r: tr.watch(resp.Body), n: limit})
	switch {
	case err == nil:
		return sink.n, nil
	case sink.err != nil:
		return sink.n, fmt.Errorf("%s: writing: %w", op, sink.err)
	case errors.Is(err, errBodyTooLarge):
		return sink.n, fmt.Errorf("%s: %w: more than %d bytes", op, ErrTooLarge, limit)
	}
	return sink.n, tr.explain(op, fmt.Errorf("%s: reading body: %w", op, err))
}

// Expecter is a Download writer told the file's size, when the sandbox sends it, before any
// of the file is read: a writer that holds the bytes in memory takes room for them first (or
// refuses, failing the Download with its error) instead of finding out as they arrive.
type Expecter interface {
	Expect(n int64) error
}

// sinkWriter counts what reached w and keeps w's error apart from the body's.
type sinkWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (s *sinkWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.n += int64(n)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		s.err = err
	}
	return n, err
}
