package tools

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// What a listed sandbox is doing.
const (
	stateRunning   = "running"
	stateSuspended = "suspended"
)

type listSandboxesArgs struct {
	Namespace string `json:"namespace"`
}

// SandboxInfo is one of list_sandboxes' rows.
type SandboxInfo struct {
	SandboxClaimName string            `json:"sandbox_claim_name"`
	Namespace        string            `json:"namespace"`
	SandboxName      string            `json:"sandbox_name,omitempty" jsonschema:"the Sandbox bound to the claim, empty until one is"`
	Ready            bool              `json:"ready" jsonschema:"the claim's Ready condition (as the Kubernetes API reports it; get_sandbox_status reads the Sandbox itself)"`
	State            string            `json:"state" jsonschema:"running, or suspended when the Sandbox was suspended (spec.operatingMode)"`
	Created          string            `json:"created" jsonschema:"when the sandbox was created (RFC 3339)"`
	AgeSeconds       int64             `json:"age_seconds"`
	ShutdownTime     string            `json:"shutdown_time,omitempty" jsonschema:"when the sandbox will be deleted (RFC 3339); empty: never"`
	Pool             string            `json:"pool" jsonschema:"the warm pool it was created from"`
	Labels           map[string]string `json:"labels,omitempty" jsonschema:"the labels create_sandbox was given"`
	RequestID        string            `json:"request_id,omitempty" jsonschema:"the request_id create_sandbox was given"`
}

// ListSandboxesResult is list_sandboxes' answer.
type ListSandboxesResult struct {
	Sandboxes []SandboxInfo `json:"sandboxes"`
}

func listSandboxesTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("list_sandboxes",
		mcp.WithToolTitle("List your sandboxes"),
		mcp.WithDescription("Lists your sandboxes, from any session or replica: name, state, age, shutdown time, pool, labels, request_id."),
		inputSchema(objectSchema(nil, map[string]prop{"namespace": namespaceOrAllProp()})),
		outputSchema[ListSandboxesResult](),
		hints(true, false, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "list your sandboxes"
		var a listSandboxesArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		owner, err := d.Owner(ctx)
		if err != nil {
			return failure(op, claimRef{}, err), nil
		}
		// From the API (Claims.List), never this process's memory: another process made them.
		claims, ref, err := d.ownedClaims(ctx, owner, a.Namespace)
		if err != nil {
			return failure(op, ref, err), nil
		}
		out := ListSandboxesResult{Sandboxes: make([]SandboxInfo, 0, len(claims))}
		now := time.Now()
		for _, c := range claims {
			out.Sandboxes = append(out.Sandboxes, sandboxInfo(c, now))
		}
		return structured(out), nil
	}}
}

func sandboxInfo(c kube.Claim, now time.Time) SandboxInfo {
	row := SandboxInfo{
		SandboxClaimName: c.Name, Namespace: c.Namespace, SandboxName: c.SandboxName, Ready: c.Ready,
		State: stateRunning, Created: c.Created.UTC().Format(time.RFC3339), AgeSeconds: int64(now.Sub(c.Created).Seconds()),
		Pool: c.WarmPool, RequestID: c.RequestID,
	}
	if c.Suspended {
		row.State = stateSuspended
	}
	if !c.ShutdownAt.IsZero() {
		row.ShutdownTime = c.ShutdownAt.UTC().Format(time.RFC3339)
	}
	if len(c.Labels) > 0 {
		row.Labels = c.Labels
	}
	return row
}
