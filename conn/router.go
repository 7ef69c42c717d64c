package conn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// defaultCallTimeout bounds file operations whose context carries no deadline: in total, and
// for Upload and Download as the longest time without progress (see startTransfer).
const defaultCallTimeout = 5 * time.Minute

// endpoint says where the python runtime of a sandbox is reached.
type endpoint interface {
	// base is the URL that /execute, /upload, ... are appended to.
	base(ctx context.Context, t Target) (string, error)
	// forget drops a cached address after a connection error on it.
	forget(base string)
	// routed reports whether requests go through the sandbox router (and need its headers).
	routed() bool
}

// pyConn talks the python-runtime protocol (strategies gateway, direct and in-cluster).
type pyConn struct {
	ep          endpoint
	serverPort  int
	maxDownload int64
	client      *http.Client
	ports       http.RoundTripper // the client's transport before instrumentation: proxied app traffic is not ours to trace
	closed      atomic.Bool
}

func newPyConn(cfg Config, inst instrumentation, dialer *net.Dialer, ep endpoint) *pyConn {
	client, raw := newHTTPClient(dialer, inst.http)
	return &pyConn{ep: ep, serverPort: cfg.ServerPort, maxDownload: cfg.MaxDownloadBytes, client: client, ports: raw}
}

// newHTTPClient never follows redirects (a redirect from a runtime means a wrong path, and
// following it could re-send an upload elsewhere) and ignores proxy settings: sandbox
// addresses are cluster-internal. wrap (may be nil) instruments the client's transport; raw
// is the transport without it.
func newHTTPClient(dialer *net.Dialer, wrap func(http.RoundTripper) http.RoundTripper) (client *http.Client, raw http.RoundTripper) {
	raw = &http.Transport{
		DialContext:         dialer.DialContext,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	rt := raw
	if wrap != nil {
		rt = wrap(raw)
	}
	return &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, raw
}

func (p *pyConn) Close() error {
	if p.closed.CompareAndSwap(false, true) {
		p.client.CloseIdleConnections()
	}
	return nil
}

// request is one HTTP call to the runtime.
type request struct {
	op          string
	method      string
	path        string // endpoint path, e.g. "/execute" or "/list/<enc>"
	body        io.Reader
	size        int64 // body's length when http.NewRequest cannot see it; 0: unknown
	contentType string
	// timeoutHint is sent as X-Sandbox-Timeout through a router (0: from the ctx deadline).
	timeoutHint time.Duration
}

// do sends r and returns the response for any status; the caller closes the body.
// Transport failures come back as ErrUnreachable (or the ctx error) and make a cached
// gateway address be forgotten.
func (p *pyConn) do(ctx context.Context, t Target, r request) (*http.Response, error) {
	if p.closed.Load() {
		return nil, &preSendError{fmt.Errorf("%s: connection is closed", r.op)}
	}
	base, err := p.ep.base(ctx, t)
	if err != nil {
		return nil, &preSendError{fmt.Errorf("%s: %w", r.op, err)}
	}
	req, err := http.NewRequestWithContext(ctx, r.method, joinURL(base, r.path), r.body)
	if err != nil {
		return nil, &preSendError{fmt.Errorf("%s: building request: %w", r.op, err)}
	}
	if r.size > 0 {
		req.ContentLength = r.size
	}
	withReplay(req, r.body)
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	if p.ep.routed() {
		p.setRouterHeaders(ctx, req, t, r.timeoutHint)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			p.ep.forget(base)
		}
		if isDialError(err) {
			return nil, &preSendError{transportError(ctx, r.op, err)}
		}
		return nil, transportError(ctx, r.op, err)
	}
	return resp, nil
}

// preSendError marks a failure before anything was sent: no command can be running.
type preSendError struct{ err error }

func (e *preSendError) Error() string { return e.err.Error() }
func (e *preSendError) Unwrap() error { return e.err }

// isDialError reports a failure to connect: the request was certainly not sent.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// setRouterHeaders adds what the sandbox router routes by. X-Sandbox-ID is the Sandbox
// name: with warm pools it differs from the claim name.
func (p *pyConn) setRouterHeaders(ctx context.Context, req *http.Request, t Target, hint time.Duration) {
	req.Header.Set("X-Sandbox-ID", t.SandboxName)
	req.Header.Set("X-Sandbox-Namespace", t.Namespace)
	req.Header.Set("X-Sandbox-Port", strconv.Itoa(p.serverPort))
	// Like the Python SDK, name the pod IP when the Sandbox status has one: the router then
	// needs neither its informer cache (which can lag a just-adopted warm sandbox by a few
	// milliseconds and answer 502) nor cluster DNS.
	if ip := selectPodIP(t.PodIPs); ip != "" {
		req.Header.Set("X-Sandbox-Pod-IP", ip)
	}
	if hint <= 0 {
		if dl, ok := ctx.Deadline(); ok {
			hint = time.Until(dl)
		}
	}
	if hint > 0 {
		req.Header.Set("X-Sandbox-Timeout", strconv.FormatFloat(hint.Seconds(), 'f', 3, 64))
	}
}

// joinURL appends an endpoint path to a base that may carry a path prefix, with one '/'.
func joinURL(base, path string) string {
	return strings.TrimRight(base, "/") + "/" + strings.TrimLeft(path, "/")
}

// withCallTimeout gives a file operation a deadline when the caller set none.
func withCallTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, defaultCallTimeout)
}
