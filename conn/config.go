package conn

import (
	"context"
	"time"
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

// Config selects and parameterises a strategy. Field defaults are the spec's and are filled
// in by the configuration loader, not here.
type Config struct {
	Type string

	GatewayName         string
	GatewayNamespace    string
	GatewayReadyTimeout time.Duration
	APIURL              string
	ServerPort          int
	UsePodIP            bool

	Mode     string
	RESTPort int
	GRPCPort int

	// ClusterDomain builds <sandbox>.<ns>.svc.<ClusterDomain> for in-cluster DNS mode
	// (empty: cluster.local).
	ClusterDomain string
	// DNSServer, when set (IP or IP:port, port 53 by default), resolves sandbox host names
	// with that server instead of the system resolver, for HTTP and gRPC alike (the local
	// stack has no cluster DNS).
	DNSServer string
	// MaxDownloadBytes bounds Download responses held in memory (0: 32 MiB). Download
	// applies the smaller of this and its own maxBytes argument.
	MaxDownloadBytes int64
}

// GatewayResolver finds the address of a Gateway (its first usable status.addresses value),
// waiting up to wait for one to appear.
type GatewayResolver interface {
	GatewayAddress(ctx context.Context, namespace, name string, wait time.Duration) (string, error)
}
