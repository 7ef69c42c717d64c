package conn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	processv1 "sigs.k8s.io/agent-sandbox/packages/sandboxd/spec/process/v1"
)

const (
	// The memory one command's output can hold in this process, whatever its size, is
	// about one flow-control window of chunks the budget has not consumed yet, plus one
	// message being decoded. gRPC's default window grows with its bandwidth estimate up to
	// 16 MiB, and that much piled up whenever the consumer fell behind (a GC, a busy CPU);
	// a fixed window turns the estimator off. 256 KiB still carries hundreds of MB/s at a
	// pod network's round trip.
	recvWindow = 256 << 10
	// maxRecvMsg bounds one output chunk. sandboxd sends 4 KiB chunks unless started with a
	// larger --stream-chunk-size; a bigger message fails the call with what to change.
	maxRecvMsg = 1 << 20
	// idleConnTTL closes a cached ClientConn no call has used for this long. Every sandbox
	// has its own address, and a ClientConn keeps its goroutines (three callback serializers,
	// even in gRPC's idle mode) until closed, so a busy server's connections to sandboxes
	// deleted long ago would otherwise pile up. The next call after it dials again (one TCP
	// connect on the pod network).
	idleConnTTL = 30 * time.Second
)

// sandboxdConn reaches sandboxd in the pod: commands over gRPC ProcessService, files over
// its REST API. No router, no port-forward.
type sandboxdConn struct {
	mode        string
	restPort    int
	grpcPort    int
	maxDownload int64
	dialer      *net.Dialer
	client      *http.Client
	ports       http.RoundTripper // client's transport before instrumentation (exposed ports)
	grpcOpts    []grpc.DialOption // instrumentation of the gRPC clients
	idleTTL     time.Duration     // idleConnTTL; shorter in tests

	mu     sync.Mutex
	conns  map[string]*cachedConn
	closed bool
}

// cachedConn is one ClientConn per target address, shared by concurrent calls.
type cachedConn struct {
	cc       *grpc.ClientConn
	refs     int
	lastUsed time.Time
	dropped  bool        // removed from the cache: close when the last user releases it
	idle     *time.Timer // closes it idleConnTTL after its last user released it
}

func newSandboxdConn(cfg Config, inst instrumentation, dialer *net.Dialer) *sandboxdConn {
	client, raw := newHTTPClient(dialer, inst.http)
	return &sandboxdConn{mode: cfg.Mode, restPort: cfg.RESTPort, grpcPort: cfg.GRPCPort,
		maxDownload: cfg.MaxDownloadBytes, dialer: dialer, client: client, ports: raw, grpcOpts: inst.grpc, idleTTL: idleConnTTL,
		conns: map[string]*cachedConn{}}
}

// SandboxdFlowOptions are the flow-control window and message-size limit of every gRPC
// connection to sandboxd (see recvWindow and maxRecvMsg); the bench's lean baseline dials with
// them too, so that both send the same frames.
func SandboxdFlowOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithInitialWindowSize(recvWindow), grpc.WithInitialConnWindowSize(recvWindow),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecvMsg))}
}

// host is the sandbox address for the configured mode; the modes never fall back to
// each other, so an empty status field is reported with what to fix.
func (s *sandboxdConn) host(t Target) (string, error) {
	if s.mode == ModePodIP {
		return podIPHost(t)
	}
	if t.ServiceFQDN == "" {
		return "", fmt.Errorf("%w: Sandbox %s/%s has an empty status.serviceFQDN; with K8S_SANDBOX_CONNECTION__MODE=%s "+
			"the sandbox template needs spec.service: true (or use MODE=%s)", ErrNoAddress, t.Namespace, t.SandboxName, ModeService, ModePodIP)
	}
	return t.ServiceFQDN, nil
}

// grpcClient returns the cached ClientConn for target; release must be called when done.
func (s *sandboxdConn) grpcClient(target string) (processv1.ProcessServiceClient, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, errors.New("exec: connection is closed")
	}
	c := s.conns[target]
	if c == nil {
		// passthrough: the address goes to our dialer as is, so DNSServer applies to it.
		opts := append([]grpc.DialOption{
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				return s.dialer.DialContext(ctx, "tcp", addr)
			}),
		}, append(SandboxdFlowOptions(), s.grpcOpts...)...)
		cc, err := grpc.NewClient("passthrough:///"+target, opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("exec: gRPC client for %s: %w", target, err)
		}
		c = &cachedConn{cc: cc}
		s.conns[target] = c
	}
	c.refs++
	c.lastUsed = time.Now()
	release := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		c.refs--
		c.lastUsed = time.Now()
		switch {
		case c.refs > 0:
		case c.dropped:
			_ = c.cc.Close()
		case c.idle == nil:
			c.idle = time.AfterFunc(s.idleTTL, func() { s.closeIdle(target, c) })
		default:
			c.idle.Reset(s.idleTTL)
		}
	}
	return processv1.NewProcessServiceClient(c.cc), release, nil
}

// closeIdle closes c if it is still target's cached connection and no call used it since
// its idle timer was set.
func (s *sandboxdConn) closeIdle(target string, c *cachedConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns[target] != c || c.refs > 0 || time.Since(c.lastUsed) < s.idleTTL {
		return
	}
	delete(s.conns, target)
	_ = c.cc.Close()
}

// dropConn forgets a connection that failed to reach its target, so the next call dials
// afresh instead of waiting out gRPC's reconnect backoff.
func (s *sandboxdConn) dropConn(target string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conns[target]
	if c == nil {
		return
	}
	delete(s.conns, target)
	c.dropped = true
	if c.refs == 0 {
		_ = c.cc.Close()
	}
}

func (s *sandboxdConn) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for target, c := range s.conns {
		if err := c.cc.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing gRPC connection to %s: %w", target, err))
		}
		delete(s.conns, target)
	}
	s.client.CloseIdleConnections()
	return errors.Join(errs...)
}
