//go:build e2e

package e2e

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBadInputReachesTheModelAsOneSentence: through the built binary, over stdio and HTTP, an
// argument that breaks its schema gets the sentence that names it, its bound and what to do
// (never the schema validator's raw text), and nothing is sent to the cluster.
func TestBadInputReachesTheModelAsOneSentence(t *testing.T) {
	ns := stack.Namespace(t)
	conn := connections()[4] // sandboxd-pod-ip: any connection type validates the same way
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"execute_command", map[string]any{"sandbox_claim_name": "x", "namespace": ns.Name, "command": "true", "max_output_chars": 127},
			"max_output_chars must be between 128 and 300000, got 127. Pass a value in that range, or leave max_output_chars out for the default (30000)."},
		{"execute_command", map[string]any{"sandbox_claim_name": "x", "namespace": "Team-A", "command": "true"},
			`namespace "Team-A" is not valid. Kubernetes namespace of the sandbox: lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters. Defaults to the server's current namespace.`},
		{"download_file", map[string]any{"sandbox_claim_name": "x", "namespace": ns.Name, "path": "a\x00b"},
			`path "a\x00b" is not valid. A path of 1 to 4096 characters, without control characters.`},
		{"create_sandbox", map[string]any{"warmpool": "demo-pool\r\nX: y", "namespace": ns.Name},
			`warmpool "demo-pool\r\nX: y" is not valid. A Kubernetes object name: lowercase letters, digits, '-' and '.', at most 253 characters.`},
		{"create_sandbox", map[string]any{"warmpool": conn.pool, "namespace": ns.Name, "shutdown_after_seconds": 18446744075},
			"shutdown_after_seconds must be between 1 and 31536000 seconds, got 18446744075. Pass a value in that range, or leave shutdown_after_seconds out for the default (300)."},
	}
	sessions := map[string]func(t *testing.T) *mcp.ClientSession{
		"stdio": func(t *testing.T) *mcp.ClientSession { return stdioSession(t, conn.env, "") },
		"http":  func(t *testing.T) *mcp.ClientSession { return httpSession(t, httpServer(t, conn.env), "") },
	}
	for name, open := range sessions {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			for _, c := range cases {
				if got := callError(t, s, c.tool, c.args); got != c.want {
					t.Errorf("%s %v:\n got: %s\nwant: %s", c.tool, c.args, got, c.want)
				}
			}
		})
	}
	claims, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns.Name).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 0 {
		t.Errorf("bad input created %d claims", len(claims.Items))
	}
}

// TestCreateMetadataAndSizeRefused is issue 33 point 5: labels in the server's and
// agent-sandbox's domains, pod metadata that would put the pod on another network or into a
// mesh, and a volume of a thousandth of a byte were all accepted. Each is now an error naming
// the key or the floor, and no claim reaches the cluster.
func TestCreateMetadataAndSizeRefused(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	conn := connections()[4]
	s := stdioSession(t, conn.env, "")
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"labels": map[string]any{"mcp.k8s-agent-sandbox/principal": "someone"}}, `label "mcp.k8s-agent-sandbox/principal" is in the domain mcp.k8s-agent-sandbox`},
		{map[string]any{"labels": map[string]any{"agents.x-k8s.io/created-by": "x"}}, "domain agents.x-k8s.io"},
		{map[string]any{"pod_annotations": map[string]any{"k8s.v1.cni.cncf.io/networks": "macvlan-conf"}}, `pod annotation "k8s.v1.cni.cncf.io/networks": this server refuses it`},
		{map[string]any{"pod_labels": map[string]any{"sidecar.istio.io/inject": "true"}}, `pod label "sidecar.istio.io/inject"`},
		{map[string]any{"volume_size": "1e-3"}, "less than the smallest volume this server creates (1Mi)"},
	} {
		args := map[string]any{"warmpool": conn.pool, "namespace": ns.Name}
		maps.Copy(args, c.args)
		if got := callError(t, s, "create_sandbox", args); !strings.Contains(got, c.want) {
			t.Errorf("create_sandbox %v:\n got: %s\nwant it to contain: %s", c.args, got, c.want)
		}
	}
	claims, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns.Name).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 0 {
		t.Errorf("refused creates left %d claims", len(claims.Items))
	}
}
