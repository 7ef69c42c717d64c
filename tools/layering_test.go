package tools

import (
	"go/build"
	"strings"
	"testing"
)

// TestLayering keeps the architecture visible in the imports: kube, conn and output know
// nothing of MCP or of each other, so any of them can be reused or replaced alone.
func TestLayering(t *testing.T) {
	const mod = "github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/"
	forbidden := []string{"github.com/mark3labs/mcp-go", "github.com/modelcontextprotocol", mod}
	for _, pkg := range []string{"kube", "conn", "conn/conntest", "output"} {
		p, err := build.Default.Import(mod+pkg, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range append(p.Imports, p.TestImports...) {
			for _, f := range forbidden {
				if strings.HasPrefix(imp, f) && !strings.HasPrefix(imp, mod+pkg) && !(pkg == "conn/conntest" && imp == mod+"conn") {
					t.Errorf("%s imports %s", pkg, imp)
				}
			}
		}
	}
}
