//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/release"
)

// TestReleaseBundleOnRealNode installs the Claude Desktop bundle hack/release.sh makes (for
// this machine's platform) as Claude Desktop does, fills in its settings form with the real
// cluster's kubeconfig, a namespace and the gateway connection, starts the server from the
// manifest's command, and uses a sandbox through it: create (in the namespace of the form,
// the call names none), execute, delete.
func TestReleaseBundleOnRealNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	mcpbBin, err := release.MCPBBin(ctx, stack.RepoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(mcpbBin, "mcpb")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("@anthropic-ai/mcpb is not installed (hack/deps.sh installs it): %v", err)
		}
		t.Skipf("@anthropic-ai/mcpb is not installed; run hack/deps.sh (%v)", err)
	}
	ns := stack.Namespace(t, localstack.PythonPool)
	const tag = "v0.0.1-e2e.1"
	out := filepath.Join(t.TempDir(), "dist")
	if err := release.RunScript(ctx, stack.RepoRoot, tag, out, "RELEASE_PLATFORMS=host", "RELEASE_SKIP=image,chart"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "extension")
	if err := release.Unpack(filepath.Join(out, "k8s-sandbox-mcp-0.0.1-e2e.1.mcpb"), dir); err != nil {
		t.Fatal(err)
	}
	m, err := release.ReadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	settings, err := stack.Connection("GATEWAY")
	if err != nil {
		t.Fatal(err)
	}
	user, err := release.UserConfigFor(m, settings)
	if err != nil {
		t.Fatal(err)
	}
	user["kubeconfig"], user["namespace"] = stack.Kubeconfig, ns.Name
	c, err := release.Resolve(m, dir, release.NodePlatform(runtime.GOOS), user)
	if err != nil {
		t.Fatal(err)
	}
	// Claude Desktop starts servers with a small environment of its own.
	cmd := c.Cmd("PATH=/usr/bin:/bin", "HOME="+t.TempDir())
	cmd.Stderr = serverLog(t)
	s, err := newClient().Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("starting the bundle's %s %q: %v", c.Command, c.Args, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if v := s.InitializeResult().ServerInfo.Version; v != tag {
		t.Errorf("serverInfo.version %q, want %s", v, tag)
	}
	created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": localstack.PythonPool, "shutdown_after_seconds": 600})
	if created.Namespace != ns.Name {
		t.Errorf("the sandbox is in %q, want the bundle's namespace setting %q", created.Namespace, ns.Name)
	}
	res := call[execResult](t, s, "execute_command", map[string]any{"sandbox_claim_name": created.SandboxClaimName, "command": "echo from-the-bundle"})
	if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "from-the-bundle" {
		t.Errorf("execute_command: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	call[map[string]any](t, s, "delete_sandbox", map[string]any{"sandbox_claim_name": created.SandboxClaimName})
}
