package conn_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

type nopGateway struct{}

func (nopGateway) GatewayAddress(context.Context, string, string, time.Duration) (string, error) {
	return "10.0.0.1", nil
}

// TestNew checks the dispatch only: the settings rules live in internal/config, whose
// tests cover every accepted and refused form.
func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  conn.Config
		gw   conn.GatewayResolver
		want string // "" means built
	}{
		{"gateway", conn.Config{Type: conn.TypeGateway, GatewayName: "gw", GatewayNamespace: "default", GatewayReadyTimeout: time.Minute, ServerPort: 8888}, nopGateway{}, ""},
		{"direct", conn.Config{Type: conn.TypeDirect, APIURL: "http://router.example:8080/prefix", ServerPort: 8888}, nil, ""},
		{"in-cluster", conn.Config{Type: conn.TypeInCluster, ServerPort: 8888}, nil, ""},
		{"sandboxd", conn.Config{Type: conn.TypeSandboxdInCluster, Mode: conn.ModePodIP, RESTPort: 8080, GRPCPort: 9090, DNSServer: "10.96.0.10:53"}, nil, ""},
		{"gateway without resolver", conn.Config{Type: conn.TypeGateway, GatewayName: "gw"}, nil,
			"connection type gateway needs a Gateway resolver (internal error)"},
		{"unknown type", conn.Config{Type: "port-forward"}, nil,
			`unknown connection type "port-forward" (internal error: the settings loader admits only gateway, direct, in-cluster, sandboxd-in-cluster)`},
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
			if err == nil || err.Error() != tc.want {
				t.Fatalf("New: got %v, want %q", err, tc.want)
			}
		})
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

// TestControlPorts: every connection type names the ports it drives from its own settings, so
// a runtime moved to another port is what expose_port refuses, and every runtime's default
// ports whatever the type, since a sandbox of the other runtime can be claimed through it.
func TestControlPorts(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  conn.Config
		want []int
	}{
		{"gateway", conn.Config{Type: conn.TypeGateway, GatewayName: "gw", ServerPort: 8888}, []int{8888, 8080, 9090}},
		{"direct, moved", conn.Config{Type: conn.TypeDirect, APIURL: "http://router.example:8080", ServerPort: 9000}, []int{9000, 8888, 8080, 9090}},
		// The attack run's case: an in-cluster server claimed a sandboxd pod and exposed 8080.
		{"in-cluster", conn.Config{Type: conn.TypeInCluster, ServerPort: 8888}, []int{8888, 8080, 9090}},
		{"in-cluster by pod IP", conn.Config{Type: conn.TypeInCluster, UsePodIP: true, ServerPort: 8888}, []int{8888, 8080, 9090}},
		{"sandboxd", conn.Config{Type: conn.TypeSandboxdInCluster, Mode: conn.ModePodIP, RESTPort: 8080, GRPCPort: 9090}, []int{8080, 9090, 8888}},
		{"sandboxd, moved", conn.Config{Type: conn.TypeSandboxdInCluster, Mode: conn.ModeService, RESTPort: 18080, GRPCPort: 19090}, []int{18080, 19090, 8888, 8080, 9090}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := conn.New(tc.cfg, nopGateway{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			p, ok := c.(conn.Porter)
			if !ok {
				t.Fatalf("%T is not a Porter", c)
			}
			var got []int
			for _, cp := range p.ControlPorts() {
				if cp.What == "" || cp.Hands == "" {
					t.Errorf("port %d says neither what it is nor what it hands out: %+v", cp.Port, cp)
				}
				got = append(got, cp.Port)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("control ports %v, want %v", got, tc.want)
			}
		})
	}
}
