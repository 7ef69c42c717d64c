package conn

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// PortEndpoint is where HTTP for one TCP port of a sandbox goes: Base (scheme and host, maybe
// a path prefix), Header to add (the router's routing headers), and the Transport to use.
type PortEndpoint struct {
	Base      *url.URL
	Header    http.Header
	Transport http.RoundTripper
}

// Porter reaches any TCP port of a sandbox over HTTP, the way the connection type reaches its
// runtime: through the sandbox router (gateway, direct), or at the pod IP or Service name
// (in-cluster, sandboxd). The program must listen on the pod's address, not only 127.0.0.1.
type Porter interface {
	Port(ctx context.Context, t Target, port int) (PortEndpoint, error)
}

func (p *pyConn) Port(ctx context.Context, t Target, port int) (PortEndpoint, error) {
	base, err := p.ep.base(ctx, t)
	if err != nil {
		return PortEndpoint{}, err
	}
	u, err := url.Parse(base)
	if err != nil {
		return PortEndpoint{}, fmt.Errorf("%w: runtime address %q: %w", ErrNoAddress, base, err)
	}
	h := http.Header{}
	if p.ep.routed() {
		h.Set("X-Sandbox-ID", t.SandboxName)
		h.Set("X-Sandbox-Namespace", t.Namespace)
		h.Set("X-Sandbox-Port", strconv.Itoa(port))
		if ip := selectPodIP(t.PodIPs); ip != "" {
			h.Set("X-Sandbox-Pod-IP", ip)
		}
	} else {
		u.Host = hostPort(u.Hostname(), port)
	}
	return PortEndpoint{Base: u, Header: h, Transport: p.ports}, nil
}

func (s *sandboxdConn) Port(_ context.Context, t Target, port int) (PortEndpoint, error) {
	host, err := s.host(t)
	if err != nil {
		return PortEndpoint{}, err
	}
	return PortEndpoint{Base: &url.URL{Scheme: "http", Host: hostPort(host, port)}, Header: http.Header{}, Transport: s.ports}, nil
}
