package tools

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// errNoPorts is a server built without a port registry (tests, embedders).
var errNoPorts = errors.New("this server cannot expose ports")

type portArgs struct {
	claimArgs
	Port int `json:"port"`
}

// ExposeResult is expose_port's answer.
type ExposeResult struct {
	URL  string `json:"url" jsonschema:"reaches the port through this server: over HTTP with the same credentials as the MCP endpoint"`
	Port int    `json:"port"`
}

// UnexposeResult is unexpose_port's answer.
type UnexposeResult struct {
	Unexposed bool `json:"unexposed" jsonschema:"false when nothing was exposed"`
}

func portProp(lead string) prop {
	return described(prop{"type": "integer", "minimum": 1, "maximum": 65535}, lead, ".")
}

func exposeTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("expose_port",
		mcp.WithToolTitle("Expose a sandbox port"),
		mcp.WithDescription("Returns a URL to a TCP port of the sandbox (HTTP, WebSocket); the program must listen on 0.0.0.0. Over HTTP it is on this server, same credentials (use relative links); over stdio, on 127.0.0.1."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "port"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(), "port": portProp(""),
		})),
		outputSchema[ExposeResult](),
		hints(false, false, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "expose the port"
		a, ref, owner, err := d.portCall(ctx, req)
		var url string
		if err == nil {
			url, err = d.Ports.Expose(ctx, owner, ref.Namespace, ref.Name, a.Port)
		}
		if err != nil {
			return failure(op, ref, err), nil
		}
		return structured(ExposeResult{URL: url, Port: a.Port}), nil
	}}
}

func unexposeTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("unexpose_port",
		mcp.WithToolTitle("Stop exposing a sandbox port"),
		mcp.WithDescription("Ends expose_port's URLs for a port, or for all its ports when port is left out."),
		inputSchema(objectSchema([]string{"sandbox_claim_name"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(), "port": portProp(""),
		})),
		outputSchema[UnexposeResult](),
		hints(false, false, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, ref, owner, err := d.portCall(ctx, req)
		var found bool
		if err == nil {
			found, err = d.Ports.Unexpose(ctx, owner, ref.Namespace, ref.Name, a.Port)
		}
		if err != nil {
			return failure("unexpose the port", ref, err), nil
		}
		return structured(UnexposeResult{Unexposed: found}), nil
	}}
}

// portCall binds a port tool's arguments and names the caller; without a registry it fails.
func (d Deps) portCall(ctx context.Context, req mcp.CallToolRequest) (portArgs, claimRef, string, error) {
	var a portArgs
	if err := bind(req, &a); err != nil {
		return a, claimRef{}, "", err
	}
	ref, owner, err := d.caller(ctx, a.claimArgs)
	if err == nil && d.Ports == nil {
		err = errNoPorts
	}
	return a, ref, owner, err
}
