package tools

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

type extendArgs struct {
	claimArgs
	ShutdownAfterSeconds int `json:"shutdown_after_seconds"`
}

// ExtendResult is extend_sandbox's answer.
type ExtendResult struct {
	SandboxClaimName string `json:"sandbox_claim_name"`
	Namespace        string `json:"namespace"`
	ShutdownTime     string `json:"shutdown_time" jsonschema:"RFC 3339 time at which the sandbox is now deleted unless it is used or extended again"`
}

func extendTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("extend_sandbox",
		mcp.WithToolTitle("Extend a sandbox's lifetime"),
		mcp.WithDescription("Moves the sandbox's automatic deletion to shutdown_after_seconds from now. Call it before a long task or pause."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "shutdown_after_seconds"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(),
			"shutdown_after_seconds": described(prop{"type": "integer", "minimum": 1, "maximum": d.maxShutdownAfter()}, d.lifetimeCapText(), ""),
		})),
		outputSchema[ExtendResult](),
		hints(false, false, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "extend the sandbox"
		var a extendArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		ref, owner, err := d.caller(ctx, a.claimArgs)
		if err != nil {
			return failure(op, ref, err), nil
		}
		c, err := d.Claims.Extend(ctx, ref.Namespace, ref.Name, owner, time.Duration(a.ShutdownAfterSeconds)*time.Second)
		if err != nil {
			return failure(op, ref, err), nil
		}
		return structured(ExtendResult{SandboxClaimName: ref.Name, Namespace: ref.Namespace, ShutdownTime: rfc3339(c.ShutdownAt)}), nil
	}}
}

// rfc3339 formats a time for an answer; "" when there is none.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
