package conn

import (
	"context"
	"net/http"
	"time"

	"google.golang.org/grpc"
)

// Connection types, as spelled in K8S_SANDBOX_CONNECTION__TYPE.
const (
	TypeGateway           = "gateway"
	TypeDirect            = "direct"
	TypeInCluster         = "in-cluster"
	TypeSandboxdInCluster = "sandboxd-in-cluster"

	ModeService = "in-cluster-service"
	ModePodIP   = "in-cluster-pod-ip"
)

// Defaults of Config's zero values. internal/config applies the same constants, so a setting
// left unset and a Config built in code agree.
const (
	DefaultClusterDomain = "cluster.local"
	// DefaultMaxDownloadBytes bounds a Download held in memory (32 MiB).
	DefaultMaxDownloadBytes = 32 << 20
)

// Config selects and parameterises a strategy. internal/config owns every rule about these
// values (which forms are accepted, ranges, what is required for which type) and hands New
// only values that passed them; New does not check them again.
type Config struct {
	Type string // one of the Type* constants

	GatewayName         string
	GatewayNamespace    string
	GatewayReadyTimeout time.Duration
	APIURL              string // absolute http(s) URL, optionally with a path prefix
	ServerPort          int
	UsePodIP            bool

	Mode     string // ModeService or ModePodIP
	RESTPort int
	GRPCPort int

	// ClusterDomain builds <sandbox>.<ns>.svc.<ClusterDomain> for in-cluster DNS mode
	// (empty: DefaultClusterDomain).
	ClusterDomain string
	// DNSServer, when set, is host:port of a DNS server that resolves sandbox host names
	// instead of the system resolver, for HTTP and gRPC alike (the local stack has no
	// cluster DNS). The port is always present: the loader adds 53 to a bare IP.
	DNSServer string
	// MaxDownloadBytes bounds Download responses held in memory (0: DefaultMaxDownloadBytes).
	// Download applies the smaller of this and its own maxBytes argument.
	MaxDownloadBytes int64
}

// Option adds to what New builds beyond the settings.
type Option func(*instrumentation)

// instrumentation wraps the clients that reach sandboxes (tracing); nil fields add nothing.
type instrumentation struct {
	http func(http.RoundTripper) http.RoundTripper
	grpc []grpc.DialOption
}

// WithInstrumentation wraps every HTTP client's transport with wrap and adds opts to every
// gRPC client (traces).
func WithInstrumentation(wrap func(http.RoundTripper) http.RoundTripper, opts []grpc.DialOption) Option {
	return func(i *instrumentation) { i.http, i.grpc = wrap, opts }
}

// GatewayResolver finds the address of a Gateway (its first usable status.addresses value),
// waiting up to wait for one to appear.
type GatewayResolver interface {
	GatewayAddress(ctx context.Context, namespace, name string, wait time.Duration) (string, error)
}
