package conn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

func directConn(t *testing.T, srv *httptest.Server) conn.Conn {
	return mustNew(t, conn.Config{Type: conn.TypeDirect, APIURL: srv.URL + "/sandbox-router", ServerPort: 8888}, nil)
}

func quietExec(c conn.Conn, t *testing.T, cmd string, timeout time.Duration) (string, conn.ExecResult, error) {
	return quietExecOn(c, t, routedTarget, cmd, timeout)
}

func quietExecOn(c conn.Conn, t *testing.T, tg conn.Target, cmd string, timeout time.Duration) (string, conn.ExecResult, error) {
	var out strings.Builder
	res, err := c.Exec(t.Context(), tg, conn.ExecRequest{Command: cmd, Stdout: &out, Stderr: &out, Timeout: timeout})
	return out.String(), res, err
}

// A 5xx from the router may come after the command started; it must not be re-sent
// (the upstream SDK retries and so runs commands up to six times), but its process
// group is killed in case it is still running.
func TestExecIsNeverRetried(t *testing.T) {
	var runs, kills atomic.Int32
	srv, _ := startRouted(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/execute" {
			return false
		}
		var body struct{ Command string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		if strings.Contains(body.Command, "kill -s KILL") {
			kills.Add(1)
		} else {
			runs.Add(1)
		}
		writeJSON(w, http.StatusBadGateway, map[string]string{"detail": "Could not connect to the backend sandbox: pool-x7k2p"})
		return true
	})
	_, _, err := quietExec(directConn(t, srv), t, "echo once", 10*time.Second)
	if !errors.Is(err, conn.ErrUnreachable) || !strings.Contains(err.Error(), "Could not connect to the backend sandbox") {
		t.Fatalf("got %v, want ErrUnreachable carrying the router's detail", err)
	}
	if runs.Load() != 1 || kills.Load() != 1 {
		t.Fatalf("command sent %d times and kill %d times, want 1 and 1", runs.Load(), kills.Load())
	}
}

func TestStatusMapping(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   any
		want   error
		text   string
	}{
		{403, map[string]string{"message": "Access denied"}, conn.ErrDenied, "Access denied"},
		{401, map[string]string{"detail": "Unauthorized"}, conn.ErrDenied, "Unauthorized"},
		{502, map[string]string{"detail": "Could not connect to the backend sandbox: s"}, conn.ErrUnreachable, "Could not connect"},
		{504, map[string]string{"detail": "Timed out waiting for the backend sandbox: s"}, conn.ErrUnreachable, "Timed out"},
		{500, map[string]string{"message": "List files failed: boom"}, nil, "List files failed: boom"},
		{400, map[string]string{"detail": "Invalid sandbox ID format."}, nil, "Invalid sandbox ID format."},
		{307, nil, nil, "answered with a redirect (HTTP 307 to \"/sandbox-router/list/elsewhere\"), which it does for a path it rewrites"},
	} {
		var hits atomic.Int32
		srv, _ := startRouted(t, func(w http.ResponseWriter, r *http.Request) bool {
			hits.Add(1)
			if tc.status == 307 {
				http.Redirect(w, r, "/sandbox-router/list/elsewhere", tc.status)
				return true
			}
			writeJSON(w, tc.status, tc.body)
			return true
		})
		_, err := directConn(t, srv).List(t.Context(), routedTarget, "dir", 10)
		if err == nil || tc.want != nil && !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("HTTP %d: got %v, want %v containing %q", tc.status, err, tc.want, tc.text)
		}
		if tc.want == nil && (errors.Is(err, conn.ErrNotFound) || errors.Is(err, conn.ErrUnreachable)) {
			t.Errorf("HTTP %d: %v must not be classified", tc.status, err)
		}
		// A 500 of /list is followed by one /execute that lists without following links.
		if want := map[bool]int32{true: 2, false: 1}[tc.status == 500]; hits.Load() != want {
			t.Errorf("HTTP %d: %d requests, want %d (no retries, no redirects followed)", tc.status, hits.Load(), want)
		}
	}
}

// TestPathsAboveSendNoRequest: a path out of the working directory is refused by the server
// itself, so no runtime ever sees it (nor answers it with a redirect).
func TestPathsAboveSendNoRequest(t *testing.T) {
	var hits atomic.Int32
	srv, _ := startRouted(t, func(http.ResponseWriter, *http.Request) bool {
		hits.Add(1)
		return false
	})
	c := directConn(t, srv)
	for _, tc := range []struct {
		op string
		do func(p string) error
	}{
		{"Download", func(p string) error { _, err := c.Download(t.Context(), routedTarget, p, io.Discard, 10); return err }},
		{"List", func(p string) error { _, err := c.List(t.Context(), routedTarget, p, 10); return err }},
		{"Exists", func(p string) error { _, err := c.Exists(t.Context(), routedTarget, p); return err }},
	} {
		for _, p := range []string{"..", "../x", "a/../../b", "/.."} {
			if err := tc.do(p); !errors.Is(err, conn.ErrDenied) {
				t.Errorf("%s(%q): %v, want ErrDenied", tc.op, p, err)
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached the runtime, want none", n)
	}
}

func closedPort(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	return addr
}

func TestGatewayAddressForgottenAfterConnectionError(t *testing.T) {
	srv := httptest.NewServer(&fakeRouter{next: newFakeRuntime(t).handler()})
	t.Cleanup(srv.Close)
	gw := &fakeGateway{t: t, addrs: []string{closedPort(t), srv.Listener.Addr().String()}}
	c := mustNew(t, gatewayConfig(8888), gw)

	if _, _, err := quietExec(c, t, "echo hi", 10*time.Second); !errors.Is(err, conn.ErrUnreachable) {
		t.Fatalf("first exec against a dead address: got %v, want ErrUnreachable", err)
	}
	out, res, err := quietExec(c, t, "echo hi", 10*time.Second)
	if err != nil || res.ExitCode != 0 || out != "hi\n" {
		t.Fatalf("second exec: %q exit %d err %v", out, res.ExitCode, err)
	}
	if _, _, err := quietExec(c, t, "true", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := gw.lookups(); n != 2 {
		t.Fatalf("gateway looked up %d times, want 2 (once more after the connection error only)", n)
	}
}

func TestGatewayResolverError(t *testing.T) {
	gw := &fakeGateway{t: t, err: errors.New(`Gateway "sandbox-gw" did not get an IP`)}
	c := mustNew(t, gatewayConfig(8888), gw)
	_, err := c.Exists(t.Context(), routedTarget, "x")
	if !errors.Is(err, conn.ErrUnreachable) || !strings.Contains(err.Error(), "did not get an IP") {
		t.Fatalf("got %v, want ErrUnreachable with the resolver's message", err)
	}
}

func TestInClusterErrors(t *testing.T) {
	c := mustNew(t, conn.Config{Type: conn.TypeInCluster, UsePodIP: true, ServerPort: 8888}, nil)
	_, _, err := quietExecOn(c, t, conn.Target{Namespace: "n", SandboxName: "s"}, "true", time.Second)
	if !errors.Is(err, conn.ErrNoAddress) || !strings.Contains(err.Error(), "status.podIPs") {
		t.Errorf("no pod IPs: got %v, want ErrNoAddress naming status.podIPs", err)
	}
	host, port, _ := net.SplitHostPort(closedPort(t))
	c = mustNew(t, conn.Config{Type: conn.TypeInCluster, UsePodIP: true, ServerPort: atoi(t, port)}, nil)
	_, err = c.Exists(t.Context(), conn.Target{Namespace: "n", SandboxName: "s", PodIPs: []string{host}}, "x")
	if !errors.Is(err, conn.ErrUnreachable) {
		t.Errorf("refused connection: got %v, want ErrUnreachable", err)
	}
}

// The configured limit applies where a call gives none.
func TestRuntimeDownloadLimitFromConfig(t *testing.T) {
	srv, _ := startRouted(t, nil)
	c := mustNew(t, conn.Config{Type: conn.TypeDirect, APIURL: srv.URL + "/sandbox-router", ServerPort: 8888, MaxDownloadBytes: 100}, nil)
	if _, err := c.Upload(t.Context(), routedTarget, "f.bin", bytes.NewReader(make([]byte, 101))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Download(t.Context(), routedTarget, "f.bin", io.Discard, 0); !errors.Is(err, conn.ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge from the configured 100-byte limit", err)
	}
	// A call's own bound wins: a copy or a transfer URL streams past the tools' limit.
	if n, err := c.Download(t.Context(), routedTarget, "f.bin", io.Discard, 1<<20); err != nil || n != 101 {
		t.Fatalf("with the call's bound of 1 MiB: %d, %v", n, err)
	}
}

func TestRuntimeUploadRefusesQuotesInNames(t *testing.T) {
	srv, router := startRouted(t, nil)
	c := directConn(t, srv)
	for _, p := range []string{`a"b.txt`, `back\slash.txt`} {
		if _, err := c.Upload(t.Context(), routedTarget, p, strings.NewReader("x")); err == nil || !strings.Contains(err.Error(), "python runtime") {
			t.Errorf("Upload(%q): got %v, want a clear refusal", p, err)
		}
	}
	if router.count() != 0 {
		t.Errorf("refused uploads reached the router")
	}
}

func TestRuntimeCloseIsIdempotent(t *testing.T) {
	srv, _ := startRouted(t, nil)
	c := directConn(t, srv)
	if c.Close() != nil || c.Close() != nil {
		t.Fatal("Close failed")
	}
	if _, _, err := quietExec(c, t, "true", time.Second); err == nil {
		t.Fatal("Exec after Close succeeded")
	}
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// When the runtime's own limit (300 s) kills a command it answers 200 with a Python error
// quoting the argv; that is a timeout, not output.
func TestRuntimeOwnTimeoutIsErrTimeout(t *testing.T) {
	srv, _ := startRouted(t, func(w http.ResponseWriter, r *http.Request) bool {
		writeJSON(w, 200, map[string]any{"stdout": "", "exit_code": 1,
			"stderr": "Failed to execute command: Command '['/bin/sh', '-c', 'f=$1...']' timed out after 300.0 seconds"})
		return true
	})
	out, _, err := quietExec(directConn(t, srv), t, "sleep 400", 600*time.Second)
	if !errors.Is(err, conn.ErrTimeout) || out != "" {
		t.Fatalf("got %q, %v; want ErrTimeout and no wrapper noise", out, err)
	}
}

func TestExecWithCancelledContextSendsNothing(t *testing.T) {
	srv, router := startRouted(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := directConn(t, srv).Exec(ctx, routedTarget, conn.ExecRequest{Command: "true", Stdout: &strings.Builder{}, Stderr: &strings.Builder{}})
	if !errors.Is(err, context.Canceled) || router.count() != 0 {
		t.Fatalf("got %v after %d requests, want context.Canceled and none", err, router.count())
	}
}
