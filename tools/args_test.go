package tools

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The input schemas are compiled on each tool's first call (validated); this is the check
// that every one of them compiles, which building the server no longer does.
func TestEveryInputSchemaCompiles(t *testing.T) {
	all := All(Deps{})
	if len(all) == 0 {
		t.Fatal("no tools")
	}
	for _, st := range all {
		if _, err := newArgSchema(st.Tool); err != nil {
			t.Errorf("%s: %v", st.Tool.Name, err)
		}
	}
}

func TestBrokenSchemaFailsTheCallNotTheServer(t *testing.T) {
	broken := mcp.NewToolWithRawSchema("broken", "", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":"one"}}}`))
	if _, err := newArgSchema(broken); err == nil {
		t.Fatal("a schema with a string minimum compiled")
	}
	called := false
	st := validated(server.ServerTool{Tool: broken, Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		called = true
		return mcp.NewToolResultText("ran"), nil
	}})
	if _, err := st.Handler(context.Background(), mcp.CallToolRequest{}); err == nil || called {
		t.Errorf("call with a broken schema: err %v, handler ran %v", err, called)
	}
}
