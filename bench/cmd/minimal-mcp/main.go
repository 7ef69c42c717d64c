// Command minimal-mcp is the start-up baseline of the benchmarks: an mcp-go server over stdio
// with a single tool and nothing else, so the difference to k8s-sandbox-mcp is what our
// server adds (its packages' initialisation, settings, Kubernetes client, tools).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	s := server.NewMCPServer("minimal-mcp", "0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo",
		mcp.WithDescription("Returns its text argument."),
		mcp.WithString("text", mcp.Required(), mcp.Description("Text to return."))),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, "minimal-mcp:", err)
		os.Exit(1)
	}
}
