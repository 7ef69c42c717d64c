package tools

import (
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLayering keeps the architecture visible in the imports, test files included: kube, conn
// and output know nothing of MCP or of each other, so any of them can be reused or replaced
// alone; the internal packages each lean only on what their job needs; the end-to-end tests
// drive the server only as a built binary against a cluster.
func TestLayering(t *testing.T) {
	const mod = "github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/"
	const mcpgo, gosdk = "github.com/mark3labs/mcp-go", "github.com/modelcontextprotocol/go-sdk"
	rules := []struct {
		pkg  string
		ours []string // the module's packages it may import
		mcp  []string // MCP libraries it may import
	}{
		{"kube", nil, nil},
		{"output", nil, nil},
		{"conn", []string{"conn/conntest"}, nil},
		// Processes and file edits are scripts over Exec.
		{"conn/proc", []string{"conn"}, nil},
		{"conn/workspace", []string{"conn"}, nil},
		{"conn/conntest", []string{"conn", "conn/proc", "conn/workspace"}, nil},
		{"conn/usage", []string{"conn"}, nil},
		{"tools", []string{"conn", "conn/proc", "conn/usage", "conn/workspace", "internal/budget", "internal/hostfs", "internal/transfer", "kube", "output"}, []string{mcpgo}},
		{"internal/auth", []string{"internal/auth/authtest"}, []string{mcpgo}},
		{"internal/auth/authtest", nil, nil},
		{"internal/budget", nil, nil},
		{"internal/cleanup", []string{"kube"}, nil},
		// doctor checks a cluster with the server's own settings, claims and connection.
		{"internal/doctor", []string{"conn", "internal/config", "kube"}, nil},
		// The bundle's manifest read as Claude Desktop reads it (its tests check the connection
		// types it offers against conn's).
		{"internal/release", []string{"conn"}, []string{gosdk}},
		{"internal/config", []string{"conn", "conn/proc", "conn/workspace", "internal/hostfs", "internal/transfer", "kube"}, nil},
		{"internal/hostfs", nil, nil},
		{"internal/logging", nil, nil},
		{"internal/owner", []string{"internal/auth"}, []string{mcpgo}},
		{"internal/serve", []string{"internal/auth", "internal/auth/authtest", "internal/budget", "internal/logging"}, []string{mcpgo}},
		{"internal/localstack", nil, nil},
		{"internal/ports", []string{"conn", "internal/readgate", "internal/token", "kube"}, nil},
		// The check of a URL's token against its claim, shared by ports and transfer.
		{"internal/readgate", []string{"kube"}, nil},
		{"internal/token", nil, nil},
		{"internal/transfer", []string{"conn", "internal/readgate", "internal/token", "kube"}, nil},
		{"internal/telemetry", nil, nil},
		{"internal/tracing", nil, []string{mcpgo}},
		{"bench/load", nil, []string{gosdk}},
		// The chart's tests check its settings with the server's parser and its schema's names
		// against the server's lists.
		{"charts", []string{"charts/helmtest", "conn", "internal/auth", "internal/config", "internal/serve", "tools"}, nil},
		{"charts/helmtest", nil, nil},
		// A test OIDC issuer, and the principal and owner label functions and label keys, to find what a
		// principal owns; the load generator and its round-robin front; the bound an unexposed
		// stream is held to (ports.StreamsEndWithin); the memory the documented formula allows (budget.WorstCase);
		// the release script's runner and the bundle's manifest read as Claude Desktop reads it.
		{"internal/e2e", []string{"internal/localstack", "internal/budget", "internal/auth", "internal/auth/authtest", "internal/owner", "internal/ports", "internal/release", "kube", "bench/load", "charts/helmtest"}, []string{gosdk}},
	}
	root := ".." // a test runs in its package's directory (and -trimpath leaves runtime.Caller no path)
	ctx := build.Default
	ctx.BuildTags = append(ctx.BuildTags, "e2e")
	for _, r := range rules {
		p, err := ctx.ImportDir(filepath.Join(root, r.pkg), 0)
		if err != nil {
			t.Fatalf("%s: %v", r.pkg, err)
		}
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			switch {
			case imp == mod+r.pkg:
			case strings.HasPrefix(imp, mod) && !slices.Contains(r.ours, strings.TrimPrefix(imp, mod)):
				t.Errorf("%s imports %s", r.pkg, imp)
			case (strings.HasPrefix(imp, mcpgo) || strings.HasPrefix(imp, gosdk)) && !slices.ContainsFunc(r.mcp, func(m string) bool { return strings.HasPrefix(imp, m) }):
				t.Errorf("%s imports %s", r.pkg, imp)
			}
		}
	}
}
