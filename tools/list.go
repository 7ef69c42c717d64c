package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

type listArgs struct {
	fileArgs
	MaxEntries *int `json:"max_entries"`
}

// ListResult is list_files' answer.
type ListResult struct {
	Entries      []conn.Entry `json:"entries"`
	TotalEntries int          `json:"total_entries" jsonschema:"entries in the directory before the max_entries cap"`
	Truncated    bool         `json:"truncated" jsonschema:"true when entries holds fewer than total_entries"`
}

// ExistsResult is file_exists' answer.
type ExistsResult struct {
	Exists bool `json:"exists"`
}

func listTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("list_files",
		mcp.WithToolTitle("List a directory in a sandbox"),
		mcp.WithDescription("Lists a directory: name, size, type and mod_time of each entry."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "path"}, fileSchema(map[string]prop{
			"path":        pathProp(""),
			"max_entries": intProp("", 1, maxMaxEntries, defaultMaxEntries),
		}))),
		outputSchema[ListResult](),
		hints(true, false, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "list the directory"
		var a listArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		maxEntries := intArg(a.MaxEntries, defaultMaxEntries)
		var l conn.Listing
		if fail := d.onSandbox(ctx, op, a.fileArgs, func(ctx context.Context, t conn.Target) (err error) {
			l, err = d.Conn.List(ctx, t, a.Path, maxEntries)
			return err
		}); fail != nil {
			return fail, nil
		}
		if l.Entries == nil {
			l.Entries = []conn.Entry{}
		}
		return structured(ListResult{Entries: l.Entries, TotalEntries: l.Total, Truncated: len(l.Entries) < l.Total}), nil
	}}
}

func existsTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("file_exists",
		mcp.WithToolTitle("Check a path in a sandbox"),
		mcp.WithDescription("Whether a path exists (a missing one is no error)."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "path"}, fileSchema(nil))),
		outputSchema[ExistsResult](),
		hints(true, false, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "check the path"
		var a fileArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		var ok bool
		if fail := d.onSandbox(ctx, op, a, func(ctx context.Context, t conn.Target) (err error) {
			ok, err = d.Conn.Exists(ctx, t, a.Path)
			return err
		}); fail != nil {
			return fail, nil
		}
		return structured(ExistsResult{Exists: ok}), nil
	}}
}
