//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// served is a server process the test started and the addresses it reported.
type served struct {
	cmd     *exec.Cmd
	base    string // http://host:port of its MCP front
	metrics string // host:port of --metrics-addr, when it was given
}

// serve starts the binary with args, whose --http (and --metrics-addr, if any) name port 0,
// and returns once /healthz answers. The ports are the ones the server logs after binding
// them: a port found free by listening and closing could be taken by any socket (an outgoing
// connection's ephemeral port among them) before the server binds it. On cleanup the server
// gets SIGTERM and stopWithin to exit; lateIsError makes a later exit a test error.
func serve(t *testing.T, stopWithin time.Duration, lateIsError bool, env []string, args ...string) served {
	t.Helper()
	addrs := &boundAddrs{next: serverLog(t), http: make(chan string, 1), metrics: make(chan string, 1)}
	cmd := exec.Command(binary, args...)
	cmd.Env, cmd.Stderr = serverEnv(env...), addrs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(stopWithin):
			_ = cmd.Process.Kill()
			<-exited
			if lateIsError {
				t.Errorf("server did not stop within %s of SIGTERM", stopWithin)
			}
		}
	})
	wait := func(what string, ch <-chan string) string {
		select {
		case a := <-ch:
			return a
		case <-exited:
			t.Fatalf("server exited before it reported its %s address", what)
		case <-time.After(30 * time.Second):
			t.Fatalf("server did not report its %s address within 30 s", what)
		}
		return ""
	}
	s := served{cmd: cmd, base: "http://" + wait("HTTP", addrs.http)}
	if slices.Contains(args, "--metrics-addr") {
		s.metrics = wait("metrics", addrs.metrics)
	}
	waitFor(t, 20*time.Second, func() bool {
		resp, err := http.Get(s.base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return s
}

// boundAddrs passes the server's log on to next and picks out of it the addresses the server
// reports once it listens. It stops looking after the first 1 MiB.
type boundAddrs struct {
	next          io.Writer
	http, metrics chan string

	mu      sync.Mutex
	partial []byte
	seen    int
}

func (b *boundAddrs) Write(p []byte) (int, error) {
	b.mu.Lock()
	if b.seen < 1<<20 {
		b.seen += len(p)
		b.partial = append(b.partial, p...)
		for {
			i := bytes.IndexByte(b.partial, '\n')
			if i < 0 {
				break
			}
			b.scan(b.partial[:i])
			b.partial = b.partial[i+1:]
		}
	}
	b.mu.Unlock()
	return b.next.Write(p)
}

func (b *boundAddrs) scan(line []byte) {
	var ev struct {
		Message string `json:"message"`
		Addr    string `json:"addr"`
	}
	if json.Unmarshal(line, &ev) != nil || ev.Addr == "" {
		return
	}
	var ch chan string
	switch ev.Message {
	case "serving streamable HTTP":
		ch = b.http
	case "serving Prometheus metrics at /metrics":
		ch = b.metrics
	default:
		return
	}
	select {
	case ch <- ev.Addr:
	default: // reported already
	}
}
