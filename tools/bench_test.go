package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"
)

// The benchmarks below time one tools/call message handled in process, from the JSON-RPC
// bytes to the response value, with fakes behind the tools: what the server's own code costs
// per call apart from the transport and the sandbox. BenchmarkNoopTool is the floor: mcp-go
// with one tool that does nothing, handled the same way. Compare the two in one run:
//
//	go test ./tools -run '^$' -bench . -benchmem -count 5
//
// and profile with -cpuprofile / -trace on BenchmarkExecuteCommand.

func benchMessage(b *testing.B, tool string, args map[string]any) []byte {
	b.Helper()
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	if err != nil {
		b.Fatal(err)
	}
	return msg
}

// runMessage handles msg b.N times and checks the last reply contains want.
func runMessage(b *testing.B, s *server.MCPServer, msg []byte, want string) {
	b.Helper()
	ctx := context.Background()
	var last mcp.JSONRPCMessage
	b.ReportAllocs()
	for b.Loop() {
		last = s.HandleMessage(ctx, msg)
	}
	raw, err := json.Marshal(last)
	if err != nil {
		b.Fatal(err)
	}
	if !strings.Contains(string(raw), want) || strings.Contains(string(raw), `"isError":true`) {
		b.Fatalf("reply %s, want %s in it", raw, want)
	}
}

func BenchmarkNoopTool(b *testing.B) {
	s := server.NewMCPServer("noop", "0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	runMessage(b, s, benchMessage(b, "echo", map[string]any{"text": "hi"}), `"text":"hi"`)
}

func benchServer(stdout string) *server.MCPServer {
	claims := newFakeClaims()
	claims.add("default", "mine", testOwner)
	d := Deps{Claims: claims, Conn: &fakeConn{files: map[string][]byte{}, stdout: stdout}, DefaultNamespace: "default",
		// Every call is logged at info level in the real server; keep that cost, drop the text.
		Log:   zerolog.New(discard{}).Level(zerolog.InfoLevel),
		Owner: func(context.Context) (string, error) { return testOwner, nil }}
	return NewServer(d, "bench")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func BenchmarkExecuteCommand(b *testing.B) {
	s := benchServer("hi\n")
	runMessage(b, s, benchMessage(b, "execute_command", map[string]any{"sandbox_claim_name": "mine", "command": "echo hi"}),
		`"stdout":"hi\n"`)
}

func BenchmarkExecuteCommandArgv(b *testing.B) {
	s := benchServer("hi\n")
	runMessage(b, s, benchMessage(b, "execute_command", map[string]any{"sandbox_claim_name": "mine", "command": "echo",
		"args": []string{"hi"}}), `"stdout":"hi\n"`)
}

func BenchmarkGetSandboxStatus(b *testing.B) {
	s := benchServer("")
	runMessage(b, s, benchMessage(b, "get_sandbox_status", map[string]any{"sandbox_claim_name": "mine"}), `SandboxReady`)
}
