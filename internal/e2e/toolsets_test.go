//go:build e2e

package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestReadOnlyServerRunsNoCommand is issue 31 point 2: a read-only server lists only the tools
// that change nothing, over stdio and HTTP, and a call of a tool it does not list (a command)
// is refused rather than run.
func TestReadOnlyServerRunsNoCommand(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	c := connections()[4]
	env := append([]string{"K8S_SANDBOX_READ_ONLY=true"}, c.env...)
	for name, cs := range map[string]*mcp.ClientSession{
		"stdio": stdioSession(t, env, ""), "http": httpSession(t, httpServer(t, env), ""),
	} {
		t.Run(name, func(t *testing.T) {
			list, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var listed []string
			for _, tool := range list.Tools {
				listed = append(listed, tool.Name)
				if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
					t.Errorf("read-only server lists %s, whose readOnlyHint is not true", tool.Name)
				}
			}
			if !slices.Contains(listed, "get_sandbox_status") || slices.Contains(listed, "execute_command") || slices.Contains(listed, "create_sandbox") {
				t.Errorf("read-only tools/list: %v", listed)
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute_command", Arguments: map[string]any{
				"sandbox_claim_name": "x", "namespace": ns.Name, "command": "touch /tmp/ran"}})
			if err == nil && !res.IsError {
				t.Errorf("a read-only server ran execute_command: %+v", res.StructuredContent)
			}
		})
	}
}

// TestPinnedNamespaceIsUsedWithoutBeingPassed is issue 31 point 3 on the real stack: with the
// namespace and warm pool pinned, over stdio and HTTP, no schema offers them, a sandbox is
// created and used without passing them, it lands in the pinned namespace, and a call that
// names another namespace is refused. The Inspector CLI, an independent client, does the same.
func TestPinnedNamespaceIsUsedWithoutBeingPassed(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	env := append([]string{"K8S_SANDBOX_PIN__NAMESPACE=" + ns.Name, "K8S_SANDBOX_PIN__WARMPOOL=sandboxd-pool"}, connections()[4].env...)
	refusal := "namespace is fixed on this server (K8S_SANDBOX_PIN__NAMESPACE=" + ns.Name + "): leave it out."
	for name, cs := range map[string]*mcp.ClientSession{
		"stdio": stdioSession(t, env, ""), "http": httpSession(t, httpServer(t, env), "2025-11-25"),
	} {
		t.Run(name, func(t *testing.T) {
			list, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tool := range list.Tools {
				props, _ := tool.InputSchema.(map[string]any)["properties"].(map[string]any)
				if _, ok := props["namespace"]; ok {
					t.Errorf("%s still offers namespace", tool.Name)
				}
				if _, ok := props["warmpool"]; ok {
					t.Errorf("%s still offers warmpool", tool.Name)
				}
			}
			created := call[createResult](t, cs, "create_sandbox", map[string]any{})
			if created.Namespace != ns.Name {
				t.Fatalf("created in %q, want the pinned %q", created.Namespace, ns.Name)
			}
			if _, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns.Name).Get(t.Context(), created.SandboxClaimName, metav1.GetOptions{}); err != nil {
				t.Errorf("the claim is not in the pinned namespace: %v", err)
			}
			claim := map[string]any{"sandbox_claim_name": created.SandboxClaimName}
			if ex := call[execResult](t, cs, "execute_command", map[string]any{"sandbox_claim_name": created.SandboxClaimName, "command": "echo pinned"}); ex.Stdout != "pinned\n" {
				t.Errorf("execute_command without namespace: %+v", ex)
			}
			if msg := callError(t, cs, "execute_command", map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": "default", "command": "true"}); msg != refusal {
				t.Errorf("a call naming another namespace: %q, want %q", msg, refusal)
			}
			call[struct{}](t, cs, "delete_sandbox", claim)
		})
	}
	t.Run("inspector", func(t *testing.T) {
		target := []string{}
		for _, kv := range serverEnv(env...) {
			target = append(target, "-e", kv)
		}
		target = append(target, binary)
		out, code := inspector(t, append(target, "--method", "tools/call", "--tool-name", "list_sandboxes", "--tool-arg", "namespace=default", "--format", "json", "-q")...)
		if code != 5 || !strings.Contains(out, "K8S_SANDBOX_PIN__NAMESPACE") {
			t.Errorf("Inspector passing namespace: exit %d, %s", code, out)
		}
		out, code = inspector(t, append(target, "--method", "tools/call", "--tool-name", "list_sandboxes", "--format", "json", "-q")...)
		if code != 0 {
			t.Errorf("Inspector listing in the pinned namespace: exit %d, %s", code, out)
		}
	})
}
