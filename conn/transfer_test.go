package conn_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// fileStrategy is one way files travel: sandboxd's REST API or the python runtime's endpoints.
type fileStrategy struct {
	name string
	// real reaches the real server (sandboxd in-process) or the runtime fake.
	real func(t *testing.T) (conn.Conn, conn.Target)
	// over reaches h, which answers the strategy's requests as the test wants.
	over func(t *testing.T, h http.Handler) (conn.Conn, conn.Target)
}

// maxDownload lets the tests' downloads past the default configured bound.
const maxDownload = 1 << 30

var fileStrategies = []fileStrategy{
	{"sandboxd", func(t *testing.T) (conn.Conn, conn.Target) {
		rest, grpcPort := startSandboxd(t)
		return sandboxdAt(t, rest, grpcPort)
	}, func(t *testing.T, h http.Handler) (conn.Conn, conn.Target) {
		_, grpcPort, _ := net.SplitHostPort(closedPort(t))
		return sandboxdAt(t, serve(t, h), atoi(t, grpcPort))
	}},
	{"python runtime", func(t *testing.T) (conn.Conn, conn.Target) {
		return runtimeAt(t, newFakeRuntime(t).handler())
	}, runtimeAt},
}

var podTarget = conn.Target{Namespace: "ns", SandboxName: "sbx", PodIPs: []string{"127.0.0.1"}}

func sandboxdAt(t *testing.T, restPort, grpcPort int) (conn.Conn, conn.Target) {
	c := mustNew(t, conn.Config{Type: conn.TypeSandboxdInCluster, Mode: conn.ModePodIP, RESTPort: restPort, GRPCPort: grpcPort,
		MaxDownloadBytes: maxDownload}, nil)
	return c, podTarget
}

func runtimeAt(t *testing.T, h http.Handler) (conn.Conn, conn.Target) {
	c := mustNew(t, conn.Config{Type: conn.TypeInCluster, UsePodIP: true, ServerPort: serve(t, h), MaxDownloadBytes: maxDownload}, nil)
	return c, podTarget
}

func serve(t *testing.T, h http.Handler) int {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port
}

// allocated is what f allocated in this process, servers included: a file held whole
// anywhere on the way shows up as at least its size.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestTransfersAreStreamed: 64 MiB go up from a generated stream and come back into a hash
// with a small fraction of that allocated, both ways.
func TestTransfersAreStreamed(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 128 MiB per strategy")
	}
	const size = 64 << 20
	gen := func() io.Reader { return io.LimitReader(rand.NewChaCha8([32]byte{1}), size) }
	want := sha256.New()
	_, _ = io.Copy(want, gen())
	for _, s := range fileStrategies {
		t.Run(s.name, func(t *testing.T) {
			c, tg := s.real(t)
			var n int64
			var err error
			if a := allocated(func() { n, err = c.Upload(t.Context(), tg, "big/stream.bin", gen()) }); err != nil || n != size || a > size/8 {
				t.Fatalf("Upload: %d bytes, %v, %d bytes allocated; want %d, a fraction allocated", n, err, a, size)
			}
			got := sha256.New()
			if a := allocated(func() { n, err = c.Download(t.Context(), tg, "big/stream.bin", got, size) }); err != nil || n != size || a > size/8 {
				t.Fatalf("Download: %d bytes, %v, %d bytes allocated; want %d, a fraction allocated", n, err, a, size)
			}
			if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
				t.Fatal("the bytes downloaded differ from those uploaded")
			}
		})
	}
}

// TestDownloadLimit: a file over the limit is refused before any byte reaches w when the
// server sends its length, and once the limit is passed when it does not.
func TestDownloadLimit(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 100)
	for _, s := range fileStrategies {
		for _, tc := range []struct {
			name      string
			length    bool
			limit     int64
			tooLarge  bool
			wantBytes int
		}{
			{"length, over the limit", true, 999, true, 0},
			{"no length, over the limit", false, 999, true, 999},
			{"length, at the limit", true, 1000, false, 1000},
			{"no length, at the limit", false, 1000, false, 1000},
		} {
			t.Run(s.name+"/"+tc.name, func(t *testing.T) {
				c, tg := s.over(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/octet-stream")
					if !tc.length {
						_, _ = w.Write(body[:1])
						w.(http.Flusher).Flush() // headers gone without a length: chunked
						_, _ = w.Write(body[1:])
						return
					}
					http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
				}))
				var buf bytes.Buffer
				n, err := c.Download(t.Context(), tg, "f.bin", &buf, tc.limit)
				if errors.Is(err, conn.ErrTooLarge) != tc.tooLarge || (!tc.tooLarge && err != nil) {
					t.Fatalf("got %v, want ErrTooLarge: %v", err, tc.tooLarge)
				}
				if n != int64(buf.Len()) || buf.Len() != tc.wantBytes || !bytes.Equal(buf.Bytes(), body[:buf.Len()]) {
					t.Fatalf("returned %d, wrote %d bytes; want %d of the file", n, buf.Len(), tc.wantBytes)
				}
			})
		}
	}
}

// watchedReader yields n bytes, then fails with err (EOF if nil), or never ends if n < 0; it
// notes any read after the test said the upload had returned.
type watchedReader struct {
	n        int64
	err      error
	returned atomic.Bool
	late     atomic.Int32
}

func (r *watchedReader) Read(p []byte) (int, error) {
	if r.returned.Load() {
		r.late.Add(1)
	}
	if r.n == 0 {
		if r.err == nil {
			return 0, io.EOF
		}
		return 0, r.err
	}
	if r.n > 0 {
		p = p[:min(int64(len(p)), r.n)]
		r.n -= int64(len(p))
	}
	clear(p)
	return len(p), nil
}

var errBoom = errors.New("boom")

// TestUploadEnds: whether the reader fails midway or the server refuses before reading it
// all, Upload returns that error and leaves the reader alone from then on.
func TestUploadEnds(t *testing.T) {
	refuse := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"message":"Access denied"}`)
	})
	for _, s := range fileStrategies {
		for _, tc := range []struct {
			name string
			srv  http.Handler // nil: the real server
			r    *watchedReader
			want error
		}{
			{"reader fails midway", nil, &watchedReader{n: 3 << 20, err: errBoom}, errBoom},
			{"refused before the end of an endless body", refuse, &watchedReader{n: -1}, conn.ErrDenied},
		} {
			t.Run(s.name+"/"+tc.name, func(t *testing.T) {
				c, tg := s.real(t)
				if tc.srv != nil {
					c, tg = s.over(t, tc.srv)
				}
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				_, err := c.Upload(ctx, tg, "f.bin", tc.r)
				tc.r.returned.Store(true)
				if !errors.Is(err, tc.want) {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
				if tc.want == errBoom && !strings.Contains(err.Error(), "reading the data") {
					t.Errorf("%v: want it said that reading the data failed", err)
				}
				_ = c.Close()
				if n := tc.r.late.Load(); n != 0 {
					t.Fatalf("the reader was read %d times after Upload returned", n)
				}
			})
		}
	}
}

// TestUploadContentLength: an in-memory reader still goes with a Content-Length, as before
// uploads streamed (routers and runtimes all handle that); a stream of unknown size goes
// chunked.
func TestUploadContentLength(t *testing.T) {
	for _, s := range fileStrategies {
		for _, tc := range []struct {
			name  string
			r     io.Reader
			known bool
		}{
			{"bytes.Reader", bytes.NewReader(make([]byte, 70_000)), true},
			{"strings.Reader, empty", strings.NewReader(""), true},
			{"stream", io.LimitReader(rand.NewChaCha8([32]byte{}), 70_000), false},
		} {
			t.Run(s.name+"/"+tc.name, func(t *testing.T) {
				var length, got atomic.Int64
				c, tg := s.over(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					n, _ := io.Copy(io.Discard, r.Body)
					length.Store(r.ContentLength)
					got.Store(n)
					w.WriteHeader(http.StatusNoContent)
				}))
				if _, err := c.Upload(t.Context(), tg, "f.bin", tc.r); err != nil {
					t.Fatal(err)
				}
				if l := length.Load(); tc.known && l != got.Load() || !tc.known && l != -1 {
					t.Fatalf("Content-Length %d for %d bytes received; want it known: %v", l, got.Load(), tc.known)
				}
			})
		}
	}
}
