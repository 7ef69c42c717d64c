// Command lean-exec-mcp is item 1's second baseline: the leanest execute_command that can be
// built on the libraries the server uses, an mcp-go stdio server whose one tool runs the
// command through sandboxd's streaming Start RPC (grpc-go, dialled with the server's own
// conn.SandboxdFlowOptions) and answers with the same structured result. It has no settings,
// no Kubernetes client, no input check, no output budget, no logging, no metrics and no
// audit, so the difference to k8s-sandbox-mcp is what the server's own code adds to a
// command, and its difference to sandboxd called directly is what MCP and a gRPC stream cost
// at the least.
//
// The sandboxd address (host:port) comes from LEAN_EXEC_SANDBOXD; flags are ignored, as the
// bench starts every stdio server with the server's.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	processv1 "sigs.k8s.io/agent-sandbox/packages/sandboxd/spec/process/v1"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

type result struct {
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "lean-exec-mcp:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := os.Getenv("LEAN_EXEC_SANDBOXD")
	if addr == "" {
		return fmt.Errorf("LEAN_EXEC_SANDBOXD (host:port of sandboxd's gRPC API) is not set")
	}
	cc, err := grpc.NewClient("passthrough:///"+addr,
		append(conn.SandboxdFlowOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		return err
	}
	defer cc.Close()
	proc := processv1.NewProcessServiceClient(cc)
	s := server.NewMCPServer("lean-exec-mcp", "0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("execute_command",
		mcp.WithDescription("Runs a shell command in the sandbox."),
		mcp.WithString("command", mcp.Required(), mcp.Description("Shell command."))),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := execute(ctx, proc, req.GetString("command", ""))
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			text, err := json.Marshal(res)
			if err != nil {
				return nil, err
			}
			return mcp.NewToolResultStructured(res, string(text)), nil
		})
	return server.ServeStdio(s)
}

func execute(ctx context.Context, proc processv1.ProcessServiceClient, command string) (result, error) {
	stream, err := proc.Start(ctx, &processv1.StartRequest{Config: &processv1.ProcessConfig{Command: []string{"/bin/sh", "-c", command}}})
	if err != nil {
		return result{}, err
	}
	var stdout, stderr bytes.Buffer
	for {
		msg, err := stream.Recv()
		if err != nil {
			return result{}, err
		}
		switch ev := msg.GetEvent().(type) {
		case *processv1.StartResponse_Stdout:
			stdout.Write(ev.Stdout)
		case *processv1.StartResponse_Stderr:
			stderr.Write(ev.Stderr)
		case *processv1.StartResponse_Exit:
			return result{ExitCode: int(ev.Exit.GetExitCode()), Stdout: stdout.String(), Stderr: stderr.String()}, nil
		}
	}
}
