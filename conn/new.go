package conn

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// settingPrefix names settings in errors the way operators write them.
const settingPrefix = "K8S_SANDBOX_"

const defaultClusterDomain = "cluster.local"

// New validates cfg and returns the strategy it selects. gw is needed only for the
// gateway type.
func New(cfg Config, gw GatewayResolver) (Conn, error) {
	if err := validate(&cfg, gw); err != nil {
		return nil, err
	}
	dialer := newDialer(cfg.DNSServer)
	switch cfg.Type {
	case TypeGateway:
		return newPyConn(cfg, dialer, newGatewayEndpoint(cfg, gw)), nil
	case TypeDirect:
		return newPyConn(cfg, dialer, directEndpoint{url: cfg.APIURL}), nil
	case TypeInCluster:
		return newPyConn(cfg, dialer, inClusterEndpoint{usePodIP: cfg.UsePodIP, port: cfg.ServerPort, domain: cfg.ClusterDomain}), nil
	default: // validate admits nothing else
		return newSandboxdConn(cfg, dialer), nil
	}
}

// validate checks the settings the chosen type uses, normalising ClusterDomain and
// DNSServer, and reports every problem at once.
func validate(cfg *Config, gw GatewayResolver) error {
	var errs []error
	bad := func(setting, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s %s", settingPrefix, setting, fmt.Sprintf(format, args...)))
	}
	port := func(setting string, v int) {
		if v < 1 || v > 65535 {
			bad(setting, "must be a port between 1 and 65535, got %d", v)
		}
	}
	switch cfg.Type {
	case TypeGateway:
		if cfg.GatewayName == "" {
			bad("CONNECTION__GATEWAY_NAME", "is required for connection type gateway")
		}
		if cfg.GatewayNamespace == "" {
			bad("CONNECTION__GATEWAY_NAMESPACE", "must not be empty")
		}
		if cfg.GatewayReadyTimeout <= 0 {
			bad("CONNECTION__GATEWAY_READY_TIMEOUT", "must be positive, got %s", cfg.GatewayReadyTimeout)
		}
		if gw == nil {
			errs = append(errs, errors.New("connection type gateway needs a Gateway resolver (internal error)"))
		}
		port("CONNECTION__SERVER_PORT", cfg.ServerPort)
	case TypeDirect:
		if err := checkAPIURL(cfg.APIURL); err != nil {
			bad("CONNECTION__API_URL", "%v", err)
		}
		port("CONNECTION__SERVER_PORT", cfg.ServerPort)
	case TypeInCluster:
		port("CONNECTION__SERVER_PORT", cfg.ServerPort)
	case TypeSandboxdInCluster:
		if cfg.Mode != ModeService && cfg.Mode != ModePodIP {
			bad("CONNECTION__MODE", "must be %q or %q for connection type %s, got %q", ModeService, ModePodIP, TypeSandboxdInCluster, cfg.Mode)
		}
		port("CONNECTION__REST_PORT", cfg.RESTPort)
		port("CONNECTION__GRPC_PORT", cfg.GRPCPort)
		if cfg.RESTPort == cfg.GRPCPort {
			bad("CONNECTION__GRPC_PORT", "must differ from %sCONNECTION__REST_PORT (both %d)", settingPrefix, cfg.RESTPort)
		}
	case "":
		bad("CONNECTION__TYPE", "is required: one of %s, %s, %s, %s", TypeGateway, TypeDirect, TypeInCluster, TypeSandboxdInCluster)
	default:
		bad("CONNECTION__TYPE", "must be one of %s, %s, %s, %s, got %q", TypeGateway, TypeDirect, TypeInCluster, TypeSandboxdInCluster, cfg.Type)
	}
	if cfg.ClusterDomain == "" {
		cfg.ClusterDomain = defaultClusterDomain
	}
	cfg.ClusterDomain = strings.TrimSuffix(cfg.ClusterDomain, ".")
	if !validDomain(cfg.ClusterDomain) {
		bad("CLUSTER_DOMAIN", "must be a DNS domain such as cluster.local, got %q", cfg.ClusterDomain)
	}
	if cfg.DNSServer != "" {
		s, err := normalizeDNSServer(cfg.DNSServer)
		if err != nil {
			bad("DNS_SERVER", "must be IP or IP:port: %v", err)
		}
		cfg.DNSServer = s
	}
	if cfg.MaxDownloadBytes < 0 {
		bad("MAX_DOWNLOAD_BYTES", "must not be negative, got %d", cfg.MaxDownloadBytes)
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid connection settings: %w", errors.Join(errs...))
	}
	return nil
}

// checkAPIURL accepts an absolute http(s) URL, optionally with a path prefix.
func checkAPIURL(raw string) error {
	if raw == "" {
		return errors.New("is required for connection type direct")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("is not a valid URL: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("must start with http:// or https://, got %q", raw)
	case u.Host == "":
		return fmt.Errorf("has no host: %q", raw)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("must not carry a query or fragment: %q", raw)
	case u.User != nil:
		return fmt.Errorf("must not carry credentials")
	}
	return nil
}

func validDomain(d string) bool {
	if d == "" || len(d) > 253 {
		return false
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
