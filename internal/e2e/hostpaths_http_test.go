//go:build e2e

package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHostPathsAreStdioOnly is issue 43.4: over HTTP the host directories would be every
// caller's at once (the attack run's bob read and overwrote alice's copied-out file), so the
// copy tools are listed over stdio only; over HTTP a call of one is an unknown tool.
func TestHostPathsAreStdioOnly(t *testing.T) {
	t.Parallel()
	const aliceToken, bobToken = "hostpaths-alice-0123456789", "hostpaths-bob-0123456789ab"
	env := append([]string{"K8S_SANDBOX_HOST_PATHS=" + t.TempDir()}, connections()[4].env...)
	copies := []string{"copy_from_sandbox", "copy_to_sandbox"}
	listed := func(t *testing.T, cs *mcp.ClientSession) []string {
		t.Helper()
		list, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tool := range list.Tools {
			if slices.Contains(copies, tool.Name) {
				out = append(out, tool.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	if got := listed(t, stdioSession(t, env, "")); !slices.Equal(got, copies) {
		t.Errorf("stdio lists %v of the copy tools, want %v", got, copies)
	}
	base := httpServer(t, append([]string{"K8S_SANDBOX_AUTH__TOKENS=alice:" + aliceToken + ",bob:" + bobToken}, env...))
	for _, token := range []string{aliceToken, bobToken} {
		cs, err := authSession(t, base, token, "2025-11-25")
		if err != nil {
			t.Fatal(err)
		}
		if got := listed(t, cs); len(got) != 0 {
			t.Errorf("HTTP lists %v", got)
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "copy_from_sandbox",
			Arguments: map[string]any{"sandbox_claim_name": "sandbox-claim-x", "path": "f", "host_path": "/tmp/f"}})
		if err == nil && !res.IsError {
			t.Errorf("copy_from_sandbox over HTTP answered %s", resultText(res))
		} else if err == nil && !strings.Contains(resultText(res), "copy_from_sandbox") {
			t.Errorf("copy_from_sandbox over HTTP: %s", resultText(res))
		}
	}
}
