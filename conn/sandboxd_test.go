package conn_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"sigs.k8s.io/agent-sandbox/packages/sandboxd/pkg/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/conntest"
)

// startSandboxd runs the real sandboxd server package in-process on 127.0.0.1.
func startSandboxd(t testing.TB) (restPort, grpcPort int) {
	t.Helper()
	srv, err := server.New(server.Options{RootDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	grpcLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	restLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	srv.RegisterGRPC(gs)
	hs := &http.Server{Handler: srv.RESTHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = gs.Serve(grpcLis) }()
	go func() { _ = hs.Serve(restLis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		killNow, cancelNow := context.WithCancel(ctx)
		cancelNow() // skip the 2 s SIGTERM grace: SIGKILL leftovers at once
		srv.ShutdownProcesses(killNow)
		_ = hs.Shutdown(ctx)
		gs.Stop()
	})
	return restLis.Addr().(*net.TCPAddr).Port, grpcLis.Addr().(*net.TCPAddr).Port
}

func sandboxdPodIP(t *testing.T) (conn.Conn, conn.Target) {
	rest, grpcPort := startSandboxd(t)
	c := mustNew(t, conn.Config{Type: conn.TypeSandboxdInCluster, Mode: conn.ModePodIP, RESTPort: rest, GRPCPort: grpcPort}, nil)
	return c, conn.Target{Namespace: "ns", SandboxName: "sbx", PodIPs: []string{"127.0.0.1"}}
}

func TestSandboxdConformance(t *testing.T) {
	t.Parallel() // each suite has its own fake and directories; they mostly wait on processes
	conntest.Run(t, sandboxdPodIP)
}

func TestSandboxdServiceModeResolvesWithDNSServer(t *testing.T) {
	rest, grpcPort := startSandboxd(t)
	const fqdn = "pool-x7k2p.team-a.svc.cluster.test"
	dns := startFakeDNS(t, map[string]string{fqdn + ".": "127.0.0.1"})
	c := mustNew(t, conn.Config{Type: conn.TypeSandboxdInCluster, Mode: conn.ModeService, RESTPort: rest, GRPCPort: grpcPort, DNSServer: dns.addr}, nil)
	tg := conn.Target{Namespace: "team-a", SandboxName: "pool-x7k2p", ServiceFQDN: fqdn, PodIPs: []string{"192.0.2.1"}}
	var out strings.Builder
	res, err := c.Exec(t.Context(), tg, conn.ExecRequest{Command: "echo via-dns", Stdout: &out, Stderr: &out, Timeout: 10 * time.Second})
	if err != nil || res.ExitCode != 0 || out.String() != "via-dns\n" {
		t.Fatalf("Exec over gRPC: %q exit %d err %v", out.String(), res.ExitCode, err)
	}
	if _, err := c.Upload(t.Context(), tg, "x.txt", strings.NewReader("x")); err != nil {
		t.Fatalf("Upload over REST: %v", err)
	}
	if dns.asked(fqdn+".") == 0 {
		t.Fatal("the configured DNS server was not used")
	}
}

func TestSandboxdNoAddress(t *testing.T) {
	for _, tc := range []struct {
		mode, want string
		tg         conn.Target
	}{
		{conn.ModeService, "spec.service: true", conn.Target{Namespace: "ns", SandboxName: "s", PodIPs: []string{"127.0.0.1"}}},
		{conn.ModePodIP, "status.podIPs", conn.Target{Namespace: "ns", SandboxName: "s", ServiceFQDN: "s.ns.svc.cluster.local"}},
	} {
		c := mustNew(t, conn.Config{Type: conn.TypeSandboxdInCluster, Mode: tc.mode, RESTPort: 8080, GRPCPort: 9090}, nil)
		_, err := c.Exec(t.Context(), tc.tg, conn.ExecRequest{Command: "true", Stdout: &strings.Builder{}, Stderr: &strings.Builder{}})
		if !errors.Is(err, conn.ErrNoAddress) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s exec: got %v, want ErrNoAddress mentioning %q", tc.mode, err, tc.want)
		}
		if _, err := c.Exists(t.Context(), tc.tg, "x"); !errors.Is(err, conn.ErrNoAddress) {
			t.Errorf("%s exists: got %v, want ErrNoAddress", tc.mode, err)
		}
	}
}

func TestSandboxdStreamsOutputBeforeTimeout(t *testing.T) {
	c, tg := sandboxdPodIP(t)
	var out strings.Builder
	_, err := c.Exec(t.Context(), tg, conn.ExecRequest{Command: "echo early; sleep 30", Stdout: &out, Stderr: &out, Timeout: time.Second})
	if !errors.Is(err, conn.ErrTimeout) || out.String() != "early\n" {
		t.Fatalf("got %q, %v; want the output seen before the timeout and ErrTimeout", out.String(), err)
	}
}

// countingWriter keeps nothing but a byte count.
type countingWriter struct{ n atomic.Int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return len(p), nil
}

// peakHeap samples the heap until stop is closed and returns the largest value seen.
func peakHeap(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var peak uint64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

func TestSandboxdLargeOutputIsStreamed(t *testing.T) {
	c, tg := sandboxdPodIP(t)
	const size = 50 << 20
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	stop := make(chan struct{})
	peak := peakHeap(stop)
	stdout, stderr := &countingWriter{}, &countingWriter{}
	res, err := c.Exec(t.Context(), tg, conn.ExecRequest{Command: "head -c 52428800 /dev/zero", Stdout: stdout, Stderr: stderr, Timeout: time.Minute})
	close(stop)
	if err != nil || res.ExitCode != 0 || stdout.n.Load() != size {
		t.Fatalf("got %d bytes, exit %d, err %v; want %d bytes", stdout.n.Load(), res.ExitCode, err, size)
	}
	// Buffering would need at least the output size on top of the baseline; streaming
	// leaves only per-chunk garbage, bounded by the GC target.
	if grew := int64(<-peak) - int64(before.HeapAlloc); grew > size/3 {
		t.Fatalf("heap grew by %d MiB while streaming %d MiB", grew>>20, size>>20)
	} else {
		t.Logf("heap grew by %d KiB while streaming %d MiB", grew>>10, size>>20)
	}
}

func TestSandboxdUnreachable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := lis.Addr().(*net.TCPAddr).Port
	_ = lis.Close()
	c := mustNew(t, conn.Config{Type: conn.TypeSandboxdInCluster, Mode: conn.ModePodIP, RESTPort: port, GRPCPort: port + 1}, nil)
	tg := conn.Target{Namespace: "ns", SandboxName: "s", PodIPs: []string{"127.0.0.1"}}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err = c.Exec(ctx, tg, conn.ExecRequest{Command: "true", Stdout: &strings.Builder{}, Stderr: &strings.Builder{}})
	if !errors.Is(err, conn.ErrUnreachable) {
		t.Errorf("exec: got %v, want ErrUnreachable", err)
	}
	if _, err := c.Download(ctx, tg, "x", io.Discard, 10); !errors.Is(err, conn.ErrUnreachable) {
		t.Errorf("download: got %v, want ErrUnreachable", err)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	for name, newConn := range map[string]conntest.NewConn{"sandboxd": sandboxdPodIP} {
		t.Run(name, func(t *testing.T) {
			c, tg := newConn(t)
			if err := c.Close(); err != nil {
				t.Fatalf("first Close: %v", err)
			}
			if err := c.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			_, err := c.Exec(t.Context(), tg, conn.ExecRequest{Command: "true", Stdout: &strings.Builder{}, Stderr: &strings.Builder{}})
			if err == nil {
				t.Fatal("Exec after Close succeeded")
			}
		})
	}
}
