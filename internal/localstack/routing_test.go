//go:build e2e

package localstack_test

import (
	"errors"
	"net"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

func TestRouterAndGatewayRouteBySandboxHeaders(t *testing.T) {
	s := requireStack(t)
	ctx := testContext(t)
	ns := s.Namespace(t, localstack.PythonPool)
	c, err := s.Claim(ctx, ns.Name, localstack.PythonPool)
	if err != nil {
		t.Fatal(err)
	}
	headers := map[string]string{"X-Sandbox-ID": c.Sandbox.Name, "X-Sandbox-Namespace": ns.Name, "X-Sandbox-Port": "8888"}
	if r := pyExecute(ctx, t, s.Env["ROUTER_URL"], headers, "echo via-router"); r.Stdout != "via-router\n" {
		t.Errorf("router: %+v", r)
	}

	dyn, err := dynamic.NewForConfig(s.RestConfig)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := dyn.Resource(schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}).
		Namespace(s.Env["GATEWAY_NAMESPACE"]).Get(ctx, s.Env["GATEWAY_NAME"], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addrs, _, _ := unstructured.NestedSlice(gw.Object, "status", "addresses")
	if len(addrs) == 0 {
		t.Fatalf("gateway has no status address: %v", gw.Object["status"])
	}
	addr, _ := addrs[0].(map[string]any)["value"].(string)
	if r := pyExecute(ctx, t, "http://"+addr, headers, "echo via-gateway"); r.Stdout != "via-gateway\n" {
		t.Errorf("gateway %s: %+v", addr, r)
	}
}

func TestClusterDNSResolvesSandboxServices(t *testing.T) {
	s := requireStack(t)
	ctx := testContext(t)
	ns := s.Namespace(t)
	c, err := s.Claim(ctx, ns.Name, localstack.SandboxdPool)
	if err != nil {
		t.Fatal(err)
	}
	fqdn := c.Sandbox.Status.ServiceFQDN
	ips, err := s.Resolver().LookupHost(ctx, fqdn)
	if err != nil || len(ips) != 1 || ips[0] != c.PodIP() {
		t.Errorf("lookup %s: %v %v, want [%s]", fqdn, ips, err, c.PodIP())
	}
	_, err = s.Resolver().LookupHost(ctx, "no-such-sandbox."+ns.Name+".svc.cluster.local")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Errorf("unknown service: %v, want not found", err)
	}
}
