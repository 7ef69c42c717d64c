package conn_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

type nopGateway struct{}

func (nopGateway) GatewayAddress(context.Context, string, string, time.Duration) (string, error) {
	return "10.0.0.1", nil
}

func TestNewValidatesConfig(t *testing.T) {
	gw := conn.Config{Type: conn.TypeGateway, GatewayName: "gw", GatewayNamespace: "default", GatewayReadyTimeout: time.Minute, ServerPort: 8888}
	direct := conn.Config{Type: conn.TypeDirect, APIURL: "http://router.example:8080/prefix", ServerPort: 8888}
	sd := conn.Config{Type: conn.TypeSandboxdInCluster, Mode: conn.ModePodIP, RESTPort: 8080, GRPCPort: 9090}
	with := func(c conn.Config, f func(*conn.Config)) conn.Config { f(&c); return c }
	for _, tc := range []struct {
		name string
		cfg  conn.Config
		gw   conn.GatewayResolver
		want string // "" means valid
	}{
		{"gateway ok", gw, nopGateway{}, ""},
		{"direct ok", direct, nil, ""},
		{"in-cluster ok", conn.Config{Type: conn.TypeInCluster, ServerPort: 8888}, nil, ""},
		{"sandboxd ok", sd, nil, ""},
		{"dns server ip only", with(sd, func(c *conn.Config) { c.DNSServer = "10.96.0.10" }), nil, ""},
		{"missing type", conn.Config{}, nil, "CONNECTION__TYPE is required"},
		{"bad type", conn.Config{Type: "port-forward"}, nil, `got "port-forward"`},
		{"missing gateway name", with(gw, func(c *conn.Config) { c.GatewayName = "" }), nopGateway{}, "CONNECTION__GATEWAY_NAME is required"},
		{"missing gateway namespace", with(gw, func(c *conn.Config) { c.GatewayNamespace = "" }), nopGateway{}, "CONNECTION__GATEWAY_NAMESPACE"},
		{"zero gateway timeout", with(gw, func(c *conn.Config) { c.GatewayReadyTimeout = 0 }), nopGateway{}, "CONNECTION__GATEWAY_READY_TIMEOUT"},
		{"gateway without resolver", gw, nil, "Gateway resolver"},
		{"missing api url", with(direct, func(c *conn.Config) { c.APIURL = "" }), nil, "CONNECTION__API_URL is required"},
		{"api url scheme", with(direct, func(c *conn.Config) { c.APIURL = "ftp://x" }), nil, "CONNECTION__API_URL must start with http"},
		{"api url no host", with(direct, func(c *conn.Config) { c.APIURL = "http://" }), nil, "CONNECTION__API_URL has no host"},
		{"api url relative", with(direct, func(c *conn.Config) { c.APIURL = "router:8080" }), nil, "CONNECTION__API_URL"},
		{"api url query", with(direct, func(c *conn.Config) { c.APIURL = "http://r/?a=b" }), nil, "query"},
		{"server port zero", with(direct, func(c *conn.Config) { c.ServerPort = 0 }), nil, "CONNECTION__SERVER_PORT must be a port"},
		{"server port high", conn.Config{Type: conn.TypeInCluster, ServerPort: 70000}, nil, "CONNECTION__SERVER_PORT"},
		{"bad mode", with(sd, func(c *conn.Config) { c.Mode = "service" }), nil, "CONNECTION__MODE"},
		{"missing mode", with(sd, func(c *conn.Config) { c.Mode = "" }), nil, "CONNECTION__MODE"},
		{"rest port", with(sd, func(c *conn.Config) { c.RESTPort = -1 }), nil, "CONNECTION__REST_PORT"},
		{"grpc port", with(sd, func(c *conn.Config) { c.GRPCPort = 65536 }), nil, "CONNECTION__GRPC_PORT"},
		{"same ports", with(sd, func(c *conn.Config) { c.GRPCPort = 8080 }), nil, "must differ"},
		{"dns server name", with(sd, func(c *conn.Config) { c.DNSServer = "kube-dns:53" }), nil, "DNS_SERVER"},
		{"dns server port", with(sd, func(c *conn.Config) { c.DNSServer = "10.0.0.1:99999" }), nil, "DNS_SERVER"},
		{"cluster domain", with(sd, func(c *conn.Config) { c.ClusterDomain = "bad_domain" }), nil, "CLUSTER_DOMAIN"},
		{"negative download limit", with(sd, func(c *conn.Config) { c.MaxDownloadBytes = -1 }), nil, "MAX_DOWNLOAD_BYTES"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := conn.New(tc.cfg, tc.gw)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				_ = c.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestNewReportsAllProblems(t *testing.T) {
	_, err := conn.New(conn.Config{Type: conn.TypeSandboxdInCluster, Mode: "x", RESTPort: 0, GRPCPort: 0}, nil)
	for _, want := range []string{"CONNECTION__MODE", "CONNECTION__REST_PORT", "CONNECTION__GRPC_PORT"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to mention %s", err, want)
		}
	}
}

func TestSandboxdCachesOneGRPCConnPerAddress(t *testing.T) {
	c, tg := sandboxdPodIP(t)
	for range 3 {
		if out, res, err := quietExecOn(c, t, tg, "echo x", 10*time.Second); err != nil || res.ExitCode != 0 || out != "x\n" {
			t.Fatalf("%q %d %v", out, res.ExitCode, err)
		}
	}
	if n := conn.GRPCConnCount(c); n != 1 {
		t.Fatalf("%d cached connections after three calls to one sandbox, want 1", n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := conn.GRPCConnCount(c); n != 0 {
		t.Fatalf("%d cached connections after Close, want 0", n)
	}
}
