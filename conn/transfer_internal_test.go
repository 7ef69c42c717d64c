package conn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// TestTransferIdleBound: without a caller deadline a transfer that keeps moving outlives its
// idle bound several times over, and one that stops is cancelled as a deadline; with a
// caller deadline that alone applies.
func TestTransferIdleBound(t *testing.T) {
	const idle = 500 * time.Millisecond
	tr := startTransfer(t.Context(), idle)
	defer tr.stop()
	for end := time.Now().Add(3 * idle); time.Now().Before(end); time.Sleep(idle / 20) {
		tr.moved()
		if err := tr.ctx.Err(); err != nil {
			t.Fatalf("cancelled while moving: %v", context.Cause(tr.ctx))
		}
	}
	select {
	case <-tr.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled transfer was not cancelled")
	}
	err := tr.explain("upload \"f\"", errors.New("upload \"f\": context canceled"))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no data moved for 500ms") {
		t.Fatalf("stalled: %v, want a deadline naming the idle bound", err)
	}

	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	tr = startTransfer(ctx, idle)
	defer tr.stop()
	if dl, _ := tr.ctx.Deadline(); tr.timer != nil || !dl.Equal(deadline) {
		t.Fatalf("with a caller deadline: idle timer %v, deadline %v; want none, the caller's", tr.timer != nil, dl)
	}
}

// TestSource: counts, keeps the reader's own error (not EOF), and once finished never calls
// the reader again.
func TestSource(t *testing.T) {
	tr := startTransfer(t.Context(), time.Hour)
	defer tr.stop()
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		r       io.Reader
		wantN   int64
		wantErr error
	}{
		{"complete", strings.NewReader("hello"), 5, nil},
		{"fails midway", io.MultiReader(strings.NewReader("hel"), iotest.ErrReader(boom)), 3, boom},
		{"nil is empty", nil, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(tr, tc.r)
			_, _ = io.Copy(io.Discard, src)
			n, err := src.finish()
			if n != tc.wantN || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("finish: %d, %v; want %d, %v", n, err, tc.wantN, tc.wantErr)
			}
		})
	}
	called := false
	src := newSource(tr, readerFunc(func([]byte) (int, error) { called = true; return 0, io.EOF }))
	_, _ = src.finish()
	if _, err := src.Read(make([]byte, 8)); !errors.Is(err, errSourceDone) || called {
		t.Fatalf("read after finish: %v, reader called %v; want errSourceDone, not called", err, called)
	}
}

type failWriter struct{ short bool }

func (w failWriter) Write(p []byte) (int, error) {
	if w.short {
		return len(p) / 2, nil
	}
	return 0, errors.New("disk full")
}

// TestCopyDownload: what copyDownload makes of the body's length, the limit and w.
func TestCopyDownload(t *testing.T) {
	tr := startTransfer(t.Context(), time.Hour)
	defer tr.stop()
	body := strings.Repeat("x", 100)
	for _, tc := range []struct {
		name    string
		length  int64 // -1: unknown
		limit   int64
		w       io.Writer
		wantN   int64
		wantErr string
	}{
		{"fits", 100, 100, nil, 100, ""},
		{"length over the limit", 100, 99, nil, 0, "file too large: 100 bytes, the limit is 99"},
		{"unknown length over the limit", -1, 99, nil, 99, "file too large: more than 99 bytes"},
		{"a lying length", 10, 99, nil, 99, "file too large: more than 99 bytes"},
		{"w fails", -1, 100, failWriter{}, 0, "writing: disk full"},
		{"w writes short", -1, 100, failWriter{short: true}, 50, "writing: short write"},
		{"w told the length first", 100, 100, &expecter{want: 100}, 100, ""},
		{"w refuses the length", 100, 100, &expecter{want: 100, refuse: true}, 0, "no room"},
		{"w not told an unknown length", -1, 100, &expecter{want: -1}, 100, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := tc.w
			if w == nil {
				w = &buf
			}
			resp := &http.Response{ContentLength: tc.length, Body: io.NopCloser(strings.NewReader(body))}
			n, err := copyDownload("download \"f\"", tr, resp, w, tc.limit)
			if n != tc.wantN || (tc.w == nil && int64(buf.Len()) != n) {
				t.Errorf("%d bytes returned, %d written; want %d", n, buf.Len(), tc.wantN)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("got %v, want %q", err, tc.wantErr)
			}
			if strings.Contains(tc.wantErr, "too large") && !errors.Is(err, ErrTooLarge) {
				t.Errorf("%v: want ErrTooLarge", err)
			}
		})
	}
}

// expecter checks it is told the size before any byte is written (Expecter), or never when
// the size is unknown.
type expecter struct {
	want         int64
	refuse, told bool
	bytes.Buffer
}

func (e *expecter) Expect(n int64) error {
	e.told = true
	if n != e.want || e.Len() > 0 {
		return fmt.Errorf("told %d after %d bytes, want %d before any", n, e.Len(), e.want)
	}
	if e.refuse {
		return errors.New("no room")
	}
	return nil
}

func (e *expecter) Write(p []byte) (int, error) {
	if !e.told && e.want >= 0 {
		return 0, errors.New("written before being told the size")
	}
	return e.Buffer.Write(p)
}

// TestInMemoryUploadsReplay: an in-memory body can be sent again from its start (GetBody), as
// net/http needs to retry on a reused connection found closed; a streamed one cannot.
func TestInMemoryUploadsReplay(t *testing.T) {
	tr := startTransfer(t.Context(), time.Minute)
	defer tr.stop()
	for _, tc := range []struct {
		name string
		r    io.Reader
		ok   bool
	}{
		{"bytes.Reader", bytes.NewReader([]byte("hello")), true},
		{"bytes.Buffer", bytes.NewBufferString("hello"), true},
		{"strings.Reader", strings.NewReader("hello"), true},
		{"stream", io.MultiReader(strings.NewReader("hello")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(tr, tc.r)
			body := &framed{head: []byte("<"), tail: []byte(">"), src: src}
			req, _ := http.NewRequest(http.MethodPut, "http://x/", body)
			withReplay(req, body)
			if got := req.GetBody != nil; got != tc.ok {
				t.Fatalf("GetBody set: %v, want %v", got, tc.ok)
			}
			if !tc.ok {
				return
			}
			buf := make([]byte, 3)
			if _, err := io.ReadFull(body, buf); err != nil { // a first try, cut short
				t.Fatal(err)
			}
			again, err := req.GetBody()
			if err != nil {
				t.Fatal(err)
			}
			if all, _ := io.ReadAll(again); string(all) != "<hello>" {
				t.Errorf("replayed %q, want <hello>", all)
			}
			if n, _ := src.finish(); n != 5 {
				t.Errorf("counted %d bytes, want 5", n)
			}
		})
	}
}
