package conn

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

const dialTimeout = 10 * time.Second

// newDialer returns the dialer every strategy uses for HTTP and gRPC. With dnsServer set
// (host:port), host names are resolved by that server only: outside a cluster (the local
// test stack) the system resolver knows nothing of *.svc.<cluster-domain> names. A host
// name in dnsServer itself is resolved by the system resolver, never by itself.
func newDialer(dnsServer string) *net.Dialer {
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	if dnsServer != "" {
		dnsDialer := &net.Dialer{Timeout: 5 * time.Second}
		d.Resolver = &net.Resolver{
			PreferGo: true,
			Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return dnsDialer.DialContext(ctx, network, dnsServer)
			},
		}
	}
	return d
}

// selectPodIP picks the first IPv4 address (IPv4-mapped IPv6 counts as IPv4), else the
// first valid address, as the upstream SDK does; "" when none is usable.
func selectPodIP(ips []string) string {
	first := ""
	for _, s := range ips {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			continue
		}
		a = a.Unmap()
		if a.Is4() {
			return a.String()
		}
		if first == "" {
			first = a.String()
		}
	}
	return first
}

// urlHost brackets IPv6 literals so they can sit in a URL authority.
func urlHost(host string) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		return "[" + host + "]"
	}
	return host
}

// hostPort joins host and port for URLs and gRPC targets (IPv6 bracketed).
func hostPort(host string, port int) string {
	return net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(port))
}

// podIPHost is the pod address from the Sandbox status, or ErrNoAddress naming the field.
func podIPHost(t Target) (string, error) {
	ip := selectPodIP(t.PodIPs)
	if ip == "" {
		return "", fmt.Errorf("%w: Sandbox %s/%s has no usable status.podIPs (%q); the pod has no IP yet, check that the sandbox is Ready",
			ErrNoAddress, t.Namespace, t.SandboxName, t.PodIPs)
	}
	return ip, nil
}
