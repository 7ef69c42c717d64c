//go:build e2e

package e2e

import (
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
