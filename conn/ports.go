package conn

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
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
	// ControlPorts are the ports a runtime's API listens on: this connection's own and every
	// runtime's defaults (withEveryRuntime), whose URL would hand out what only the tools should do.
	ControlPorts() []ControlPort
}

// ControlPort is a port of a sandbox runtime that this server drives. The settings that
// point the connection at its runtime (K8S_SANDBOX_CONNECTION__*_PORT) say which ports its
// own are, so a runtime moved to another port is still refused.
type ControlPort struct {
	Port  int
	What  string // what listens there and what it does, e.g. "sandboxd's gRPC port (it runs commands)"
	Hands string // what a URL to it would give away, e.g. "command execution"
}

// The runtimes' default ports, internal/config's defaults for K8S_SANDBOX_CONNECTION__SERVER_PORT,
// __REST_PORT and __GRPC_PORT (the example templates' ports too).
const (
	DefaultServerPort = 8888 // the python runtime: /execute and its file endpoints
	DefaultRESTPort   = 8080 // sandboxd's REST API: files
	DefaultGRPCPort   = 9090 // sandboxd's gRPC API: commands
)

func pythonPorts(server int) []ControlPort {
	return []ControlPort{{Port: server, What: "the python runtime's control port (it runs commands)", Hands: "command execution"}}
}

// sandboxdPorts: on agent-sandbox v0.5 a forwarder sidecar listens on these same ports of the
// pod IP (sandboxd itself only on 127.0.0.1), so they cover it too.
func sandboxdPorts(rest, grpc int) []ControlPort {
	return []ControlPort{
		{Port: rest, What: "sandboxd's REST port (it reads and writes the sandbox's files)", Hands: "the sandbox's files"},
		{Port: grpc, What: "sandboxd's gRPC port (it runs commands)", Hands: "command execution"},
	}
}

// withEveryRuntime adds to a connection's own control ports every runtime's default ones. The
// connection type says which runtime this server speaks, not which one a sandbox runs: any
// warm pool in an allowed namespace can be claimed (an in-cluster server gave out a URL to
// sandboxd's REST port of a sandboxd pod, file access past a ports-only toolset), and the pod
// is not asked what listens where. So the ports of both runtimes are refused whatever the type.
func withEveryRuntime(own []ControlPort) []ControlPort {
	out := slices.Clone(own)
	for _, cp := range append(pythonPorts(DefaultServerPort), sandboxdPorts(DefaultRESTPort, DefaultGRPCPort)...) {
		if !slices.ContainsFunc(out, func(o ControlPort) bool { return o.Port == cp.Port }) {
			out = append(out, cp)
		}
	}
	return out
}

// ControlPorts of the python runtime (the one port its /execute and file endpoints share),
// and sandboxd's defaults.
func (p *pyConn) ControlPorts() []ControlPort {
	return withEveryRuntime(pythonPorts(p.serverPort))
}

// ControlPorts of sandboxd, and the python runtime's default.
func (s *sandboxdConn) ControlPorts() []ControlPort {
	return withEveryRuntime(sandboxdPorts(s.restPort, s.grpcPort))
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
