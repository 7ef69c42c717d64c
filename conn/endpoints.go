package conn

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// requireRoutable checks what the router needs to find a sandbox.
func requireRoutable(t Target) error {
	if t.SandboxName == "" || t.Namespace == "" {
		return fmt.Errorf("%w: target has no sandbox name or namespace (is status.sandbox.name of the claim set?)", ErrNoAddress)
	}
	return nil
}

// directEndpoint is a fixed router URL (K8S_SANDBOX_CONNECTION__API_URL).
type directEndpoint struct{ url string }

func (d directEndpoint) base(_ context.Context, t Target) (string, error) {
	return d.url, requireRoutable(t)
}
func (directEndpoint) forget(string) {}
func (directEndpoint) routed() bool  { return true }

// inClusterEndpoint reaches the runtime in the pod directly, by pod IP or by the
// Service DNS name; deliberately no fallback between the two.
type inClusterEndpoint struct {
	usePodIP bool
	port     int
	domain   string
}

func (e inClusterEndpoint) base(_ context.Context, t Target) (string, error) {
	if e.usePodIP {
		ip, err := podIPHost(t)
		if err != nil {
			return "", err
		}
		return "http://" + hostPort(ip, e.port), nil
	}
	if err := requireRoutable(t); err != nil {
		return "", err
	}
	host := t.SandboxName + "." + t.Namespace + ".svc." + e.domain
	return "http://" + hostPort(host, e.port), nil
}
func (inClusterEndpoint) forget(string) {}
func (inClusterEndpoint) routed() bool  { return false }

// gatewayEndpoint resolves the Gateway's address once and caches it until a connection
// error, so a re-addressed Gateway is picked up without a restart.
type gatewayEndpoint struct {
	gw        GatewayResolver
	namespace string
	name      string
	wait      time.Duration

	resolving chan struct{} // one resolution at a time, abandonable via ctx
	mu        sync.Mutex
	addr      string
}

func newGatewayEndpoint(cfg Config, gw GatewayResolver) *gatewayEndpoint {
	return &gatewayEndpoint{gw: gw, namespace: cfg.GatewayNamespace, name: cfg.GatewayName,
		wait: cfg.GatewayReadyTimeout, resolving: make(chan struct{}, 1)}
}

func (g *gatewayEndpoint) cached() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.addr
}

func (g *gatewayEndpoint) base(ctx context.Context, t Target) (string, error) {
	if err := requireRoutable(t); err != nil {
		return "", err
	}
	if a := g.cached(); a != "" {
		return a, nil
	}
	select {
	case g.resolving <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-g.resolving }()
	if a := g.cached(); a != "" {
		return a, nil
	}
	addr, err := g.gw.GatewayAddress(ctx, g.namespace, g.name, g.wait)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("%w: Gateway %s/%s has no address: %w", ErrUnreachable, g.namespace, g.name, err)
	}
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return "", fmt.Errorf("%w: Gateway %s/%s reported an empty address", ErrUnreachable, g.namespace, g.name)
	}
	base := gatewayBase(addr)
	g.mu.Lock()
	g.addr = base
	g.mu.Unlock()
	return base, nil
}

func (g *gatewayEndpoint) forget(base string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.addr == base {
		g.addr = ""
	}
}

func (*gatewayEndpoint) routed() bool { return true }

// gatewayBase is http://<address> on port 80, IPv6 bracketed. An address that already
// carries a port (not something Gateway status holds, but handy for tests and odd
// setups) is kept as is.
func gatewayBase(addr string) string {
	if ip, err := netip.ParseAddr(addr); err == nil {
		return "http://" + urlHost(ip.String())
	}
	if _, port, err := net.SplitHostPort(addr); err == nil && port != "" {
		return "http://" + addr
	}
	return "http://" + urlHost(addr)
}
