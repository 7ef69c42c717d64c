package tools

import (
	"context"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/workspace"
)

const (
	defaultMaxResults = 100
	maxMaxResults     = 1000
	// maxResultBytes cuts one search result (a long matching line).
	maxResultBytes = 500
)

type searchArgs struct {
	claimArgs
	Path       string `json:"path"`
	Pattern    string `json:"pattern"`
	Glob       string `json:"glob"`
	IgnoreCase bool   `json:"ignore_case"`
	MaxResults *int   `json:"max_results"`
	Timeout    *int   `json:"timeout"`
}

// SearchResult is search_files' answer.
type SearchResult struct {
	Matches   []string `json:"matches" jsonschema:"path:line:text for each matching line (path alone when only glob was given)"`
	Total     int      `json:"total" jsonschema:"all matches, also those beyond max_results"`
	Truncated bool     `json:"truncated"`
}

func searchFilesTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("search_files",
		mcp.WithToolTitle("Search files in a sandbox"),
		mcp.WithDescription("Searches a tree: with pattern, lines matching it (grep -E) as path:line:text, in files matching glob; with glob alone, matching files (a glob with / matches paths). Skips binary files and .git."),
		inputSchema(objectSchema([]string{"sandbox_claim_name"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(),
			"path":        withDefault(pathProp(""), "."),
			"pattern":     {"type": "string", "maxLength": 4096},
			"glob":        {"type": "string", "maxLength": 1024, "pattern": noControl, "description": "File name pattern, e.g. \"*.go\"."},
			"ignore_case": boolProp(""),
			"max_results": intProp("", 1, maxMaxResults, defaultMaxResults),
			"timeout":     timeoutProp(),
		})),
		outputSchema[SearchResult](),
		hints(true, false, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "search the files"
		var a searchArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		if a.Pattern == "" && a.Glob == "" {
			return failure(op, claimRef{}, badInput("pass pattern (a regular expression to find in files), glob (file names to find), or both")), nil
		}
		if a.Path == "" {
			a.Path = "."
		}
		limit := intArg(a.MaxResults, defaultMaxResults)
		var found workspace.Found
		if res := d.onClaim(ctx, op, a.claimArgs, a.Timeout, func(ctx context.Context, t conn.Target) (err error) {
			found, err = d.files().Search(ctx, t, a.Path, a.Pattern, a.Glob, limit, maxResultBytes, a.IgnoreCase)
			return err
		}); res != nil {
			return res, nil
		}
		matches := make([]string, len(found.Results))
		for i, m := range found.Results {
			matches[i] = strings.ToValidUTF8(m, "\uFFFD")
		}
		return structured(SearchResult{Matches: matches, Total: found.Total, Truncated: found.Total > len(matches)}), nil
	}}
}

type pathArgs struct {
	claimArgs
	Path        string `json:"path"`
	Destination string `json:"destination"`
	Overwrite   bool   `json:"overwrite"`
	Recursive   bool   `json:"recursive"`
	Timeout     *int   `json:"timeout"`
}

// PathResult is the answer of make_directory, move_path and remove_path.
type PathResult struct {
	Path string `json:"path" jsonschema:"the path created, moved to, or removed"`
	Done bool   `json:"done"`
}

// pathTool builds the three small path tools, which differ only in their arguments and call.
func pathTool(d Deps, name, title, desc, op string, extra map[string]prop, required []string, readOnly, destructive, idempotent bool,
	do func(ctx context.Context, fs workspace.FS, t conn.Target, a pathArgs) (string, error)) server.ServerTool {
	props := map[string]prop{"sandbox_claim_name": claimProp(), "namespace": namespaceProp(), "timeout": timeoutProp()}
	for k, v := range extra {
		props[k] = v
	}
	tool := mcp.NewTool(name, mcp.WithToolTitle(title), mcp.WithDescription(desc),
		inputSchema(objectSchema(append([]string{"sandbox_claim_name"}, required...), props)),
		outputSchema[PathResult](),
		hints(readOnly, destructive, idempotent),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a pathArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		var path string
		if res := d.onClaim(ctx, op, a.claimArgs, a.Timeout, func(ctx context.Context, t conn.Target) (err error) {
			path, err = do(ctx, d.files(), t, a)
			return err
		}); res != nil {
			return res, nil
		}
		return structured(PathResult{Path: path, Done: true}), nil
	}}
}

func makeDirectoryTool(d Deps) server.ServerTool {
	return pathTool(d, "make_directory", "Create a directory", "Creates a directory and any missing parents; an existing directory is fine.", "create the directory",
		map[string]prop{"path": pathProp("")}, []string{"path"},
		false, false, true,
		func(ctx context.Context, fs workspace.FS, t conn.Target, a pathArgs) (string, error) {
			return a.Path, fs.MakeDir(ctx, t, a.Path)
		})
}

func movePathTool(d Deps) server.ServerTool {
	return pathTool(d, "move_path", "Move or rename a file or directory", "Moves or renames path to destination (the new path, not a directory to move into), creating "+
		"its parents; an existing destination is replaced only with overwrite.", "move the path",
		map[string]prop{
			"path":        pathProp(""),
			"destination": pathProp("New path."),
			"overwrite":   boolProp(""),
		}, []string{"path", "destination"},
		false, true, false,
		func(ctx context.Context, fs workspace.FS, t conn.Target, a pathArgs) (string, error) {
			return a.Destination, fs.Move(ctx, t, a.Path, a.Destination, a.Overwrite)
		})
}

func removePathTool(d Deps) server.ServerTool {
	return pathTool(d, "remove_path", "Delete a file or directory", "Deletes a file, link (not its target) or empty directory; with recursive, also a "+
		"directory with content. There is no undo.", "remove the path",
		map[string]prop{
			"path":      pathProp(""),
			"recursive": boolProp(""),
		}, []string{"path"},
		false, true, true,
		func(ctx context.Context, fs workspace.FS, t conn.Target, a pathArgs) (string, error) {
			return a.Path, fs.Remove(ctx, t, a.Path, a.Recursive)
		})
}
