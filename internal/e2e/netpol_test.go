//go:build e2e

package e2e

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// probeScript connects to each host:port argument and prints "<addr> open" or "<addr> blocked";
// then it resolves the API server's Service name, which needs the DNS egress the policy allows.
const probeScript = `import socket, sys
for a in sys.argv[1:]:
    h, p = a.rsplit(":", 1)
    try:
        socket.create_connection((h, int(p)), timeout=3).close()
        print(a, "open")
    except OSError as e:
        print(a, "blocked", type(e).__name__)
try:
    print("dns", socket.getaddrinfo("kubernetes.default.svc.cluster.local", 443)[0][4][0])
except OSError as e:
    print("dns failed", e)
`

// TestSandboxesCannotReachEachOther is issue 33 point 1: from inside a sandbox, another
// sandbox's runtime ports (another principal's sandbox among them) answered, as did the API
// server, and this server's would have. The shipped templates' NetworkPolicy, enforced on the
// real node by kube-router, admits only the server (and the router) into a sandbox and lets a
// sandbox out only to DNS and public addresses. The server itself still reaches every sandbox:
// the same addresses answer from here, and every connection type's scenario runs against
// these templates.
func TestSandboxesCannotReachEachOther(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t, bothPools...)
	py, sbd := connections()[2], connections()[4] // in-cluster-pod-ip, sandboxd-pod-ip
	alice := stdioSession(t, py.env, "")
	bob := stdioSession(t, sbd.env, "")
	a := call[createResult](t, alice, "create_sandbox", map[string]any{"warmpool": py.pool, "namespace": ns.Name})
	c := call[createResult](t, bob, "create_sandbox", map[string]any{"warmpool": py.pool, "namespace": ns.Name})
	b := call[createResult](t, bob, "create_sandbox", map[string]any{"warmpool": sbd.pool, "namespace": ns.Name})
	podA, podB, podC := sandboxPod(t, ns.Name, a.SandboxClaimName), sandboxPod(t, ns.Name, b.SandboxClaimName), sandboxPod(t, ns.Name, c.SandboxClaimName)

	// The controller writes one policy per template, with the shipped rules.
	policies, err := stack.Kube.NetworkingV1().NetworkPolicies(ns.Name).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(policies.Items) != 2 {
		t.Fatalf("%d NetworkPolicies in the sandboxes' namespace, want one per template (2)", len(policies.Items))
	}
	for _, p := range policies.Items {
		if len(p.Spec.Ingress) != 1 || len(p.Spec.Ingress[0].From) != 2 ||
			p.Spec.Ingress[0].From[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "k8s-sandbox-mcp" {
			t.Errorf("policy %s admits %+v, want only the server's and the router's pods", p.Name, p.Spec.Ingress)
		}
	}

	api, err := url.Parse(stack.Env["APISERVER_URL"])
	if err != nil {
		t.Fatal(err)
	}
	targets := []string{
		net.JoinHostPort(podC.Status.PodIP, "8888"),      // the python runtime: commands and files
		net.JoinHostPort(podA.Status.HostIP, api.Port()), // the API server on the node
		"10.96.0.1:443", // the API server's Service
		net.JoinHostPort(podB.Status.PodIP, "8080"), // sandboxd REST: files
		net.JoinHostPort(podB.Status.PodIP, "9090"), // sandboxd gRPC: commands
	}
	mcpServer := serverOnNode(t, sbd.env, podA.Status.HostIP) // this server, over HTTP on the node's address
	targets = append(targets, mcpServer)
	// Each is open from the node, where the server runs: what is blocked is the sandbox.
	for _, addr := range targets {
		conn, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err != nil {
			t.Fatalf("%s is not open from the node either (%v): the probe below would prove nothing", addr, err)
		}
		conn.Close()
	}
	for _, from := range []struct {
		name    string
		session *mcp.ClientSession
		claim   string
		targets []string
	}{
		{"python sandbox", alice, a.SandboxClaimName, targets},
		{"sandboxd sandbox", bob, b.SandboxClaimName, append(targets[:3:3], mcpServer)}, // its own ports are not another's
	} {
		args := []any{"-c", probeScript}
		for _, addr := range from.targets {
			args = append(args, addr)
		}
		// kube-router applies a policy within a second of seeing it: poll for its first sync
		// rather than assume it came before the pods were claimed.
		var out string
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(2 * time.Second) {
			out = call[execResult](t, from.session, "execute_command", map[string]any{"sandbox_claim_name": from.claim,
				"namespace": ns.Name, "command": "python3", "args": args, "timeout": 60}).Stdout
			if !strings.Contains(out, " open") || time.Now().After(deadline) {
				break
			}
		}
		for _, addr := range from.targets {
			if !strings.Contains(out, addr+" blocked") {
				t.Errorf("from the %s, %s is not blocked:\n%s", from.name, addr, out)
			}
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if ip, ok := strings.CutPrefix(lines[len(lines)-1], "dns "); !ok || !validIP(ip) {
			t.Errorf("from the %s, cluster DNS does not answer (the policy allows it):\n%s", from.name, out)
		}
	}
}

// serverOnNode starts the server over HTTP (behind a bearer token, as a non-loopback address
// needs) on the node's address, which pods could reach but for the policy, and returns it once
// it accepts connections.
func serverOnNode(t *testing.T, env []string, host string) string {
	t.Helper()
	s := serve(t, 20*time.Second, false, append([]string{"K8S_SANDBOX_AUTH__TOKENS=probe:" + randomHex(t)}, env...),
		"--http", net.JoinHostPort(host, "0"))
	return strings.TrimPrefix(s.base, "http://")
}

func validIP(s string) bool {
	_, err := netip.ParseAddr(strings.TrimSpace(s))
	return err == nil
}
