package conn

import (
	"errors"
	"fmt"
)

// New returns the strategy cfg selects. gw is needed only for the gateway type. The settings
// were checked by their loader (internal/config); the errors here are programming errors.
func New(cfg Config, gw GatewayResolver, opts ...Option) (Conn, error) {
	if cfg.ClusterDomain == "" {
		cfg.ClusterDomain = DefaultClusterDomain
	}
	var inst instrumentation
	for _, o := range opts {
		o(&inst)
	}
	dialer := newDialer(cfg.DNSServer)
	switch cfg.Type {
	case TypeGateway:
		if gw == nil {
			return nil, errors.New("connection type gateway needs a Gateway resolver (internal error)")
		}
		return newPyConn(cfg, inst, dialer, newGatewayEndpoint(cfg, gw)), nil
	case TypeDirect:
		return newPyConn(cfg, inst, dialer, directEndpoint{url: cfg.APIURL}), nil
	case TypeInCluster:
		return newPyConn(cfg, inst, dialer, inClusterEndpoint{usePodIP: cfg.UsePodIP, port: cfg.ServerPort, domain: cfg.ClusterDomain}), nil
	case TypeSandboxdInCluster:
		return newSandboxdConn(cfg, inst, dialer), nil
	}
	return nil, fmt.Errorf("unknown connection type %q (internal error: the settings loader admits only %s, %s, %s, %s)",
		cfg.Type, TypeGateway, TypeDirect, TypeInCluster, TypeSandboxdInCluster)
}
