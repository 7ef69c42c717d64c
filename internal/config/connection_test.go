package config

import (
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// TestConnectionSettings is the rule book of every setting conn uses: each accepted form with
// the typed value conn gets, each refused form with the exact line the operator reads.
func TestConnectionSettings(t *testing.T) {
	const (
		gateway  = "gateway"
		direct   = "direct"
		cluster  = "in-cluster"
		sandboxd = "sandboxd-in-cluster"
	)
	base := map[string]map[string]string{
		gateway:  {"CONNECTION__GATEWAY_NAME": "gw"},
		direct:   {"CONNECTION__API_URL": "http://router:8080"},
		cluster:  {},
		sandboxd: {"CONNECTION__MODE": "in-cluster-pod-ip"},
	}
	tests := []struct {
		name     string
		typ      string            // "" leaves CONNECTION__TYPE unset
		set      map[string]string // without the prefix, over base[typ]
		want     func(conn.Config) bool
		wantLine string // exact error; "" means accepted
	}{
		// CONNECTION__TYPE
		{name: "type missing", wantLine: "K8S_SANDBOX_CONNECTION__TYPE is required: one of gateway, direct, in-cluster, sandboxd-in-cluster"},
		{name: "type unknown", typ: "tunnel", wantLine: `K8S_SANDBOX_CONNECTION__TYPE must be one of gateway, direct, in-cluster, sandboxd-in-cluster, got "tunnel"`},
		{name: "type case matters", typ: "Gateway", wantLine: `K8S_SANDBOX_CONNECTION__TYPE must be one of gateway, direct, in-cluster, sandboxd-in-cluster, got "Gateway"`},

		// gateway
		{name: "gateway defaults", typ: gateway, want: func(c conn.Config) bool {
			return c == conn.Config{Type: gateway, GatewayName: "gw", GatewayNamespace: "default", GatewayReadyTimeout: 180 * time.Second,
				ServerPort: 8888, ClusterDomain: "cluster.local", MaxDownloadBytes: 32 << 20}
		}},
		{name: "gateway name missing", typ: gateway, set: map[string]string{"CONNECTION__GATEWAY_NAME": " "},
			wantLine: "K8S_SANDBOX_CONNECTION__GATEWAY_NAME is required for K8S_SANDBOX_CONNECTION__TYPE=gateway"},
		{name: "gateway name with dots", typ: gateway, set: map[string]string{"CONNECTION__GATEWAY_NAME": "external.gw"},
			want: func(c conn.Config) bool { return c.GatewayName == "external.gw" }},
		{name: "gateway name upper case", typ: gateway, set: map[string]string{"CONNECTION__GATEWAY_NAME": "GW"},
			wantLine: `K8S_SANDBOX_CONNECTION__GATEWAY_NAME must be a Kubernetes object name (lower-case letters, digits, '-' and '.'), got "GW"`},
		{name: "gateway namespace", typ: gateway, set: map[string]string{"CONNECTION__GATEWAY_NAMESPACE": "gw-ns"},
			want: func(c conn.Config) bool { return c.GatewayNamespace == "gw-ns" }},
		{name: "gateway namespace with dot", typ: gateway, set: map[string]string{"CONNECTION__GATEWAY_NAMESPACE": "gw.ns"},
			wantLine: `K8S_SANDBOX_CONNECTION__GATEWAY_NAMESPACE must be a Kubernetes namespace name (at most 63 lower-case letters, digits and '-'), got "gw.ns"`},
		{name: "gateway timeout", typ: gateway, set: map[string]string{"CONNECTION__GATEWAY_READY_TIMEOUT": "3600"},
			want: func(c conn.Config) bool { return c.GatewayReadyTimeout == time.Hour }},
		{name: "gateway timeout zero", typ: gateway, set: map[string]string{"CONNECTION__GATEWAY_READY_TIMEOUT": "0"},
			wantLine: `K8S_SANDBOX_CONNECTION__GATEWAY_READY_TIMEOUT must be an integer from 1 to 3600, got "0"`},
		{name: "gateway timeout unit", typ: gateway, set: map[string]string{"CONNECTION__GATEWAY_READY_TIMEOUT": "3m"},
			wantLine: `K8S_SANDBOX_CONNECTION__GATEWAY_READY_TIMEOUT must be an integer from 1 to 3600, got "3m"`},

		// direct
		{name: "api url with prefix", typ: direct, set: map[string]string{"CONNECTION__API_URL": "https://router.example/sandbox-router"},
			want: func(c conn.Config) bool {
				return c.APIURL == "https://router.example/sandbox-router" && c.ServerPort == 8888
			}},
		{name: "api url missing", typ: direct, set: map[string]string{"CONNECTION__API_URL": ""},
			wantLine: "K8S_SANDBOX_CONNECTION__API_URL is required for K8S_SANDBOX_CONNECTION__TYPE=direct"},
		{name: "api url without scheme", typ: direct, set: map[string]string{"CONNECTION__API_URL": "router:8080"},
			wantLine: `K8S_SANDBOX_CONNECTION__API_URL must be an http:// or https:// URL such as http://sandbox-router:8080, got "router:8080"`},
		{name: "api url other scheme", typ: direct, set: map[string]string{"CONNECTION__API_URL": "ftp://router"},
			wantLine: `K8S_SANDBOX_CONNECTION__API_URL must be an http:// or https:// URL such as http://sandbox-router:8080, got "ftp://router"`},
		{name: "api url without host", typ: direct, set: map[string]string{"CONNECTION__API_URL": "http://"},
			wantLine: `K8S_SANDBOX_CONNECTION__API_URL must be an http:// or https:// URL such as http://sandbox-router:8080, got "http://"`},
		{name: "api url query", typ: direct, set: map[string]string{"CONNECTION__API_URL": "http://router/?a=b"},
			wantLine: `K8S_SANDBOX_CONNECTION__API_URL must not carry a query or fragment, got "http://router/?a=b"`},
		{name: "api url credentials not echoed", typ: direct, set: map[string]string{"CONNECTION__API_URL": "http://me:secret@router"},
			wantLine: "K8S_SANDBOX_CONNECTION__API_URL must not carry credentials (user:password@)"},

		// ports (one rule for all four)
		{name: "server port", typ: direct, set: map[string]string{"CONNECTION__SERVER_PORT": "9000"},
			want: func(c conn.Config) bool { return c.ServerPort == 9000 }},
		{name: "server port zero", typ: cluster, set: map[string]string{"CONNECTION__SERVER_PORT": "0"},
			wantLine: `K8S_SANDBOX_CONNECTION__SERVER_PORT must be an integer from 1 to 65535, got "0"`},
		{name: "server port high", typ: gateway, set: map[string]string{"CONNECTION__SERVER_PORT": "65536"},
			wantLine: `K8S_SANDBOX_CONNECTION__SERVER_PORT must be an integer from 1 to 65535, got "65536"`},
		{name: "rest port name", typ: sandboxd, set: map[string]string{"CONNECTION__REST_PORT": "http"},
			wantLine: `K8S_SANDBOX_CONNECTION__REST_PORT must be an integer from 1 to 65535, got "http"`},
		{name: "grpc port negative", typ: sandboxd, set: map[string]string{"CONNECTION__GRPC_PORT": "-1"},
			wantLine: `K8S_SANDBOX_CONNECTION__GRPC_PORT must be an integer from 1 to 65535, got "-1"`},
		{name: "same ports", typ: sandboxd, set: map[string]string{"CONNECTION__GRPC_PORT": "8080"},
			wantLine: "K8S_SANDBOX_CONNECTION__GRPC_PORT must differ from K8S_SANDBOX_CONNECTION__REST_PORT (both 8080)"},

		// in-cluster
		{name: "use pod ip", typ: cluster, set: map[string]string{"CONNECTION__USE_POD_IP": "TRUE"},
			want: func(c conn.Config) bool { return c.UsePodIP && c.ServerPort == 8888 }},
		{name: "use pod ip not a bool", typ: cluster, set: map[string]string{"CONNECTION__USE_POD_IP": "maybe"},
			wantLine: `K8S_SANDBOX_CONNECTION__USE_POD_IP must be true or false, got "maybe"`},

		// sandboxd-in-cluster
		{name: "sandboxd defaults", typ: sandboxd, set: map[string]string{"CONNECTION__MODE": "in-cluster-service"},
			want: func(c conn.Config) bool {
				return c == conn.Config{Type: sandboxd, Mode: conn.ModeService, RESTPort: 8080, GRPCPort: 9090,
					ClusterDomain: "cluster.local", MaxDownloadBytes: 32 << 20}
			}},
		{name: "mode missing", typ: sandboxd, set: map[string]string{"CONNECTION__MODE": ""},
			wantLine: "K8S_SANDBOX_CONNECTION__MODE is required for K8S_SANDBOX_CONNECTION__TYPE=sandboxd-in-cluster"},
		{name: "mode unknown", typ: sandboxd, set: map[string]string{"CONNECTION__MODE": "dns"},
			wantLine: `K8S_SANDBOX_CONNECTION__MODE must be "in-cluster-service" or "in-cluster-pod-ip", got "dns"`},

		// CLUSTER_DOMAIN
		{name: "cluster domain trailing dot and case", typ: cluster, set: map[string]string{"CLUSTER_DOMAIN": "Cluster.Test."},
			want: func(c conn.Config) bool { return c.ClusterDomain == "cluster.test" }},
		{name: "cluster domain underscore", typ: cluster, set: map[string]string{"CLUSTER_DOMAIN": "bad_domain"},
			wantLine: `K8S_SANDBOX_CLUSTER_DOMAIN must be a DNS domain such as cluster.local, got "bad_domain"`},

		// DNS_SERVER: host:port (IP or name), or a bare IP meaning port 53
		{name: "dns unset: system resolver", typ: cluster, want: func(c conn.Config) bool { return c.DNSServer == "" }},
		{name: "dns ip:port", typ: cluster, set: map[string]string{"DNS_SERVER": "127.0.0.1:10053"},
			want: func(c conn.Config) bool { return c.DNSServer == "127.0.0.1:10053" }},
		{name: "dns bare ip", typ: cluster, set: map[string]string{"DNS_SERVER": "10.96.0.10"},
			want: func(c conn.Config) bool { return c.DNSServer == "10.96.0.10:53" }},
		{name: "dns bare ipv6", typ: cluster, set: map[string]string{"DNS_SERVER": "fd00::10"},
			want: func(c conn.Config) bool { return c.DNSServer == "[fd00::10]:53" }},
		{name: "dns bracketed ipv6", typ: cluster, set: map[string]string{"DNS_SERVER": "[fd00::10]"},
			want: func(c conn.Config) bool { return c.DNSServer == "[fd00::10]:53" }},
		{name: "dns ipv6 with port", typ: cluster, set: map[string]string{"DNS_SERVER": "[fd00::10]:5353"},
			want: func(c conn.Config) bool { return c.DNSServer == "[fd00::10]:5353" }},
		{name: "dns host name with port", typ: cluster, set: map[string]string{"DNS_SERVER": "kube-dns.kube-system:53"},
			want: func(c conn.Config) bool { return c.DNSServer == "kube-dns.kube-system:53" }},
		{name: "dns localhost with port", typ: cluster, set: map[string]string{"DNS_SERVER": "localhost:10053"},
			want: func(c conn.Config) bool { return c.DNSServer == "localhost:10053" }},
		{name: "dns bare host name", typ: cluster, set: map[string]string{"DNS_SERVER": "kube-dns"},
			wantLine: `K8S_SANDBOX_DNS_SERVER must be host:port or an IP address (port 53), got "kube-dns"`},
		{name: "dns port missing", typ: cluster, set: map[string]string{"DNS_SERVER": "10.0.0.1:"},
			wantLine: `K8S_SANDBOX_DNS_SERVER must have a port from 1 to 65535, got "10.0.0.1:"`},
		{name: "dns port range", typ: cluster, set: map[string]string{"DNS_SERVER": "10.0.0.1:99999"},
			wantLine: `K8S_SANDBOX_DNS_SERVER must have a port from 1 to 65535, got "10.0.0.1:99999"`},
		{name: "dns port by name", typ: cluster, set: map[string]string{"DNS_SERVER": "10.0.0.1:domain"},
			wantLine: `K8S_SANDBOX_DNS_SERVER must have a port from 1 to 65535, got "10.0.0.1:domain"`},
		{name: "dns host missing", typ: cluster, set: map[string]string{"DNS_SERVER": ":53"},
			wantLine: `K8S_SANDBOX_DNS_SERVER must be host:port with an IP address or a DNS name as host, got ":53"`},
		{name: "dns host not a name", typ: cluster, set: map[string]string{"DNS_SERVER": "dns_server:53"},
			wantLine: `K8S_SANDBOX_DNS_SERVER must be host:port with an IP address or a DNS name as host, got "dns_server:53"`},
		{name: "dns url", typ: cluster, set: map[string]string{"DNS_SERVER": "udp://10.0.0.1:53"},
			wantLine: `K8S_SANDBOX_DNS_SERVER must be host:port or an IP address (port 53), got "udp://10.0.0.1:53"`},

		// MAX_DOWNLOAD_BYTES
		{name: "download limit default", typ: cluster, want: func(c conn.Config) bool { return c.MaxDownloadBytes == conn.DefaultMaxDownloadBytes }},
		{name: "download limit", typ: cluster, set: map[string]string{"MAX_DOWNLOAD_BYTES": "1048576"},
			want: func(c conn.Config) bool { return c.MaxDownloadBytes == 1<<20 }},
		{name: "download limit zero", typ: cluster, set: map[string]string{"MAX_DOWNLOAD_BYTES": "0"},
			wantLine: `K8S_SANDBOX_MAX_DOWNLOAD_BYTES must be an integer from 1 to 1073741824, got "0"`},
		{name: "download limit too large", typ: cluster, set: map[string]string{"MAX_DOWNLOAD_BYTES": "2147483648"},
			wantLine: `K8S_SANDBOX_MAX_DOWNLOAD_BYTES must be an integer from 1 to 1073741824, got "2147483648"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{}
			if tt.typ != "" {
				vars[Prefix+"CONNECTION__TYPE"] = tt.typ
			}
			for k, v := range base[tt.typ] {
				vars[Prefix+k] = v
			}
			for k, v := range tt.set {
				vars[Prefix+k] = v
			}
			c, err := Parse(vars)
			if tt.wantLine != "" {
				if err == nil || err.Error() != tt.wantLine {
					t.Fatalf("got %v\nwant %s", err, tt.wantLine)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want(c.Connection) {
				t.Errorf("got %+v", c.Connection)
			}
		})
	}
}
