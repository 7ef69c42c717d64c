package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// DeleteResult is delete_sandbox's answer.
type DeleteResult struct {
	SandboxClaimName string `json:"sandbox_claim_name"`
	Namespace        string `json:"namespace"`
	Deleted          bool   `json:"deleted"`
}

func deleteTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("delete_sandbox",
		mcp.WithToolTitle("Delete a sandbox"),
		mcp.WithDescription("Deletes a sandbox, its pod and its files."),
		inputSchema(objectSchema([]string{"sandbox_claim_name"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(),
		})),
		outputSchema[DeleteResult](),
		hints(false, true, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a claimArgs
		if err := bind(req, &a); err != nil {
			return failure("delete the sandbox", claimRef{}, err), nil
		}
		ref, owner, err := d.caller(ctx, a)
		if err == nil {
			err = d.Claims.Delete(ctx, ref.Namespace, ref.Name, owner)
		}
		if err != nil {
			return failure("delete the sandbox", ref, err), nil
		}
		d.observe().SandboxDeleted()
		if d.Ports != nil {
			d.Ports.Forget(ref.Namespace, ref.Name)
		}
		return structured(DeleteResult{SandboxClaimName: ref.Name, Namespace: ref.Namespace, Deleted: true}), nil
	}}
}

// StatusResult is get_sandbox_status's answer.
type StatusResult struct {
	Status       string `json:"status" jsonschema:"SandboxReady, SandboxNotReady, SandboxSuspended or SandboxNotFound"`
	Ready        bool   `json:"ready"`
	Message      string `json:"message" jsonschema:"the Kubernetes Ready condition message, empty if none"`
	ShutdownTime string `json:"shutdown_time,omitempty" jsonschema:"RFC 3339 time of its automatic deletion; use renews it"`
}

func statusTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("get_sandbox_status",
		mcp.WithToolTitle("Get sandbox status"),
		mcp.WithDescription("Whether a sandbox is ready: SandboxReady, SandboxNotReady, SandboxSuspended or SandboxNotFound."),
		inputSchema(objectSchema([]string{"sandbox_claim_name"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(),
		})),
		outputSchema[StatusResult](),
		hints(true, false, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a claimArgs
		if err := bind(req, &a); err != nil {
			return failure("get the sandbox status", claimRef{}, err), nil
		}
		ref, owner, err := d.caller(ctx, a)
		if err != nil {
			return failure("get the sandbox status", ref, err), nil
		}
		st, err := d.Claims.Status(ctx, ref.Namespace, ref.Name, owner)
		if err != nil {
			return failure("get the sandbox status", ref, err), nil
		}
		return structured(StatusResult{Status: st.Status, Ready: st.Ready, Message: st.Message, ShutdownTime: rfc3339(st.ShutdownAt)}), nil
	}}
}
