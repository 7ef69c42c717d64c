package conn

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	processv1 "sigs.k8s.io/agent-sandbox/packages/sandboxd/spec/process/v1"
)

// floodDaemon is a sandboxd whose Start sends total bytes of stdout in chunk-sized
// messages as fast as the client's flow control lets it, then exits 0.
type floodDaemon struct {
	processv1.UnimplementedProcessServiceServer
	chunk, total int
	sent         atomic.Int64 // bytes whose Send has returned
	killed       atomic.Int32 // SendSignal calls
}

func (d *floodDaemon) Start(_ *processv1.StartRequest, st processv1.ProcessService_StartServer) error {
	if err := st.Send(&processv1.StartResponse{Event: &processv1.StartResponse_Init{Init: &processv1.InitEvent{ProcessId: 1}}}); err != nil {
		return err
	}
	buf := []byte(strings.Repeat("a", d.chunk))
	for n := 0; n < d.total; n += d.chunk {
		if err := st.Send(&processv1.StartResponse{Event: &processv1.StartResponse_Stdout{Stdout: buf}}); err != nil {
			return err
		}
		d.sent.Add(int64(d.chunk))
	}
	return st.Send(&processv1.StartResponse{Event: &processv1.StartResponse_Exit{Exit: &processv1.ExitEvent{ExitCode: 0}}})
}

func (d *floodDaemon) SendSignal(context.Context, *processv1.SendSignalRequest) (*processv1.SendSignalResponse, error) {
	d.killed.Add(1)
	return &processv1.SendSignalResponse{}, nil
}

func startFloodDaemon(t *testing.T, d *floodDaemon) (*sandboxdConn, Target) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	processv1.RegisterProcessServiceServer(gs, d)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	port := delayProxy(t, lis.Addr().String(), 2*time.Millisecond)
	s := newSandboxdConn(Config{Mode: ModePodIP, GRPCPort: port}, instrumentation{}, &net.Dialer{})
	t.Cleanup(func() { _ = s.Close() })
	return s, Target{Namespace: "ns", SandboxName: "sbx", PodIPs: []string{"127.0.0.1"}}
}

// delayProxy forwards connections to target and delivers every byte lat after it was read,
// in both directions: a link with a round trip of 2*lat, like a pod network under load,
// on which gRPC's bandwidth estimator would grow its window.
func delayProxy(t *testing.T, target string, lat time.Duration) int {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	go func() {
		for {
			in, err := lis.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				_ = in.Close()
				return
			}
			t.Cleanup(func() { _ = in.Close(); _ = out.Close() })
			go delayCopy(out, in, lat)
			go delayCopy(in, out, lat)
		}
	}()
	return lis.Addr().(*net.TCPAddr).Port
}

func delayCopy(dst io.Writer, src io.Reader, lat time.Duration) {
	type piece struct {
		b   []byte
		due time.Time
	}
	q := make(chan piece, 4096)
	go func() {
		defer close(q)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				q <- piece{b[:n], time.Now().Add(lat)}
			}
			if err != nil {
				return
			}
		}
	}()
	for p := range q {
		time.Sleep(time.Until(p.due))
		if _, err := dst.Write(p.b); err != nil {
			return
		}
	}
}

// stallWriter takes fast bytes at full speed, then blocks until release is closed.
type stallWriter struct {
	fast      int64
	taken     atomic.Int64
	stalled   chan struct{}
	release   chan struct{}
	isStalled bool
}

func (w *stallWriter) Write(p []byte) (int, error) {
	if w.taken.Load() >= w.fast && !w.isStalled {
		w.isStalled = true
		close(w.stalled)
		<-w.release
	}
	w.taken.Add(int64(len(p)))
	return len(p), nil
}

// TestSandboxdExecBoundsOutputInFlight: output the server has not consumed yet is bounded by
// the fixed flow-control window, even after a fast stream. With gRPC's default dynamic
// window, the bandwidth estimator grows it towards 16 MiB during the fast part, and that
// much output can pile up in the server's memory whenever the consumer falls behind.
func TestSandboxdExecBoundsOutputInFlight(t *testing.T) {
	d := &floodDaemon{chunk: 4096, total: 64 << 20}
	s, target := startFloodDaemon(t, d)
	w := &stallWriter{fast: 32 << 20, stalled: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		res, err := s.Exec(t.Context(), target, ExecRequest{Command: "flood", Stdout: w, Stderr: io.Discard, Timeout: time.Minute})
		if err == nil && res.ExitCode != 0 {
			err = errors.New("exit code is not 0")
		}
		done <- err
	}()
	select {
	case <-w.stalled:
	case err := <-done:
		t.Fatalf("Exec ended before the consumer stalled: %v", err)
	}
	// Wait until the daemon can send no more: its sends block on the client's window.
	last := int64(-1)
	for sent := d.sent.Load(); sent != last; sent = d.sent.Load() {
		last = sent
		time.Sleep(300 * time.Millisecond)
	}
	inFlight := last - w.taken.Load()
	t.Logf("%d bytes sent but not consumed while the consumer stalled", inFlight)
	// What may wait unconsumed: the stream window on the client, and the daemon's own
	// per-stream write quota (64 KiB in grpc-go), with room to spare. The dynamic window
	// left 6-9 MiB here.
	bound := int64(recvWindow + 128<<10)
	if inFlight > bound {
		t.Errorf("%d bytes sent but not consumed while the consumer stalled, want at most %d (stream window %d)", inFlight, bound, recvWindow)
	}
	close(w.release)
	if err := <-done; err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if got := w.taken.Load(); got != int64(d.total) {
		t.Fatalf("consumed %d bytes, want %d", got, d.total)
	}
}

// TestSandboxdExecRefusesOversizedChunks: a daemon sending chunks over maxRecvMsg (started
// with a large --stream-chunk-size) fails the call with what to change, and the command's
// process group is killed rather than left running unread.
func TestSandboxdExecRefusesOversizedChunks(t *testing.T) {
	d := &floodDaemon{chunk: maxRecvMsg + 1, total: 2 * (maxRecvMsg + 1)}
	s, target := startFloodDaemon(t, d)
	_, err := s.Exec(t.Context(), target, ExecRequest{Command: "flood", Stdout: io.Discard, Stderr: io.Discard, Timeout: time.Minute})
	const want = " sends output in chunks larger than this server accepts (1048576 bytes); " +
		"start sandboxd with --stream-chunk-size 1048576 or less (its default is 4096): grpc: received message larger than max"
	if err == nil || !strings.HasPrefix(err.Error(), "exec: sandboxd at 127.0.0.1:") || !strings.Contains(err.Error(), want) {
		t.Fatalf("Exec error = %v", err)
	}
	if d.killed.Load() != 1 {
		t.Fatalf("SendSignal called %d times, want 1 (kill the group)", d.killed.Load())
	}
}

// A cached gRPC connection no call uses for idleTTL is closed (its goroutines with it); one
// in use, or used again in time, stays.
func TestIdleGRPCConnectionsClose(t *testing.T) {
	s, _ := startFloodDaemon(t, &floodDaemon{})
	s.idleTTL = 50 * time.Millisecond
	cached := func(target string) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.conns[target] != nil
	}
	_, release, err := s.grpcClient("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	_, hold, err := s.grpcClient("127.0.0.1:2")
	if err != nil {
		t.Fatal(err)
	}
	release()
	time.Sleep(4 * s.idleTTL)
	if cached("127.0.0.1:1") {
		t.Error("an idle connection stayed open")
	}
	if !cached("127.0.0.1:2") {
		t.Error("a connection in use was closed")
	}
	hold()
	for range 4 { // used again within the TTL each time: stays
		time.Sleep(s.idleTTL / 2)
		_, r, _ := s.grpcClient("127.0.0.1:2")
		r()
	}
	if !cached("127.0.0.1:2") {
		t.Error("a connection used within the TTL was closed")
	}
}
