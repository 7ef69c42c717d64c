package config

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// Bounds of the connection settings and of the archives and transfers that travel over them;
// the messages take their numbers from here.
const (
	maxGatewayReadySeconds = 3600
	maxDownloadBytesLimit  = 1 << 30
	// An archive expands, and a transfer URL's file streams, on the sandbox's disk, not in
	// the server's memory: a terabyte only keeps the numbers sane.
	maxArchiveExpandedBytesLimit = 1 << 40
	maxTransferBytesLimit        = 1 << 40
	defaultDNSPort               = "53"
)

// connection reads every setting conn uses. This is the one place their rules live: conn.New
// takes the typed values as they come out of here and does not check them again.
func (p *parser) connection() conn.Config {
	cc := conn.Config{Type: p.str("CONNECTION__TYPE", "")}
	switch cc.Type {
	case conn.TypeGateway:
		cc.GatewayName = p.required("CONNECTION__GATEWAY_NAME")
		if cc.GatewayName != "" && len(validation.IsDNS1123Subdomain(cc.GatewayName)) > 0 {
			p.fail("CONNECTION__GATEWAY_NAME", "must be a Kubernetes object name (lower-case letters, digits, '-' and '.'), got %q", cc.GatewayName)
		}
		cc.GatewayNamespace = p.str("CONNECTION__GATEWAY_NAMESPACE", "default")
		if len(validation.IsDNS1123Label(cc.GatewayNamespace)) > 0 {
			p.fail("CONNECTION__GATEWAY_NAMESPACE", "must be a Kubernetes namespace name (at most 63 lower-case letters, digits and '-'), got %q", cc.GatewayNamespace)
		}
		cc.GatewayReadyTimeout = time.Duration(p.integer("CONNECTION__GATEWAY_READY_TIMEOUT", 180, 1, maxGatewayReadySeconds)) * time.Second
		cc.ServerPort = p.port("CONNECTION__SERVER_PORT", conn.DefaultServerPort)
	case conn.TypeDirect:
		cc.APIURL = p.required("CONNECTION__API_URL")
		if cc.APIURL != "" {
			if msg := checkAPIURL(cc.APIURL); msg != "" {
				p.fail("CONNECTION__API_URL", "%s", msg)
			}
		}
		cc.ServerPort = p.port("CONNECTION__SERVER_PORT", conn.DefaultServerPort)
	case conn.TypeInCluster:
		cc.UsePodIP = p.boolean("CONNECTION__USE_POD_IP", false)
		cc.ServerPort = p.port("CONNECTION__SERVER_PORT", conn.DefaultServerPort)
	case conn.TypeSandboxdInCluster:
		cc.Mode = p.required("CONNECTION__MODE")
		if cc.Mode != "" && cc.Mode != conn.ModeService && cc.Mode != conn.ModePodIP {
			p.fail("CONNECTION__MODE", "must be %q or %q, got %q", conn.ModeService, conn.ModePodIP, cc.Mode)
		}
		cc.RESTPort = p.port("CONNECTION__REST_PORT", conn.DefaultRESTPort)
		cc.GRPCPort = p.port("CONNECTION__GRPC_PORT", conn.DefaultGRPCPort)
		if cc.RESTPort == cc.GRPCPort {
			p.fail("CONNECTION__GRPC_PORT", "must differ from %sCONNECTION__REST_PORT (both %d)", Prefix, cc.RESTPort)
		}
	case "":
		p.fail("CONNECTION__TYPE", "is required: one of %s", typeList)
	default:
		p.fail("CONNECTION__TYPE", "must be one of %s, got %q", typeList, cc.Type)
	}
	cc.ClusterDomain = strings.ToLower(strings.TrimSuffix(p.str("CLUSTER_DOMAIN", conn.DefaultClusterDomain), "."))
	if len(validation.IsDNS1123Subdomain(cc.ClusterDomain)) > 0 {
		p.fail("CLUSTER_DOMAIN", "must be a DNS domain such as %s, got %q", conn.DefaultClusterDomain, cc.ClusterDomain)
	}
	if s, ok := p.lookup("DNS_SERVER"); ok {
		var msg string
		if cc.DNSServer, msg = parseDNSServer(s); msg != "" {
			p.fail("DNS_SERVER", "%s", msg)
		}
	}
	cc.MaxDownloadBytes = int64(p.integer("MAX_DOWNLOAD_BYTES", conn.DefaultMaxDownloadBytes, 1, maxDownloadBytesLimit))
	return cc
}

var typeList = strings.Join([]string{conn.TypeGateway, conn.TypeDirect, conn.TypeInCluster, conn.TypeSandboxdInCluster}, ", ")

// checkAPIURL accepts an absolute http(s) URL, optionally with a path prefix, and says what
// is wrong otherwise. Credentials are never echoed.
func checkAPIURL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err == nil && u.User != nil:
		return "must not carry credentials (user:password@)"
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "must be an http:// or https:// URL such as http://sandbox-router:8080, got " + strconv.Quote(raw)
	case u.RawQuery != "" || u.Fragment != "":
		return "must not carry a query or fragment, got " + strconv.Quote(raw)
	}
	return ""
}

// parseDNSServer accepts host:port, where host is an IP address or a DNS name (resolved by
// the system resolver, never by the server it names), and a bare IP address, meaning port
// 53. A bare name is refused: without a port it reads as a typo more often than as a
// resolver. It returns host:port, or "" and what is wrong.
func parseDNSServer(s string) (hostPort, msg string) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		// No port: only an IP address (IPv6 with or without brackets) will do.
		a, perr := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
		if perr != nil {
			return "", "must be host:port or an IP address (port " + defaultDNSPort + "), got " + strconv.Quote(s)
		}
		return net.JoinHostPort(a.String(), defaultDNSPort), ""
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", "must have a port from 1 to 65535, got " + strconv.Quote(s)
	}
	if _, err := netip.ParseAddr(host); err != nil && len(validation.IsDNS1123Subdomain(strings.ToLower(strings.TrimSuffix(host, ".")))) > 0 {
		return "", "must be host:port with an IP address or a DNS name as host, got " + strconv.Quote(s)
	}
	return net.JoinHostPort(host, port), ""
}
