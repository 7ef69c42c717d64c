package tools

import (
	"context"
	"maps"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// interpreters maps run_code's language to the argv that runs a program given as one
// argument: the code never passes through a shell, so it needs no quoting.
var interpreters = map[string][]string{
	"python": {"python3", "-c"},
	"nodejs": {"node", "-e"},
	"bash":   {"bash", "-c"},
	"sh":     {"sh", "-c"},
}

// languages lists run_code's languages in a stable order, for the schema's enum.
func languages() []string { return slices.Sorted(maps.Keys(interpreters)) }

type runCodeArgs struct {
	claimArgs
	Code           string `json:"code"`
	Language       string `json:"language"`
	Timeout        *int   `json:"timeout"`
	MaxOutputChars *int   `json:"max_output_chars"`
}

func runCodeTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("run_code",
		mcp.WithToolTitle("Run a program in a sandbox"),
		mcp.WithDescription("Runs python, nodejs, bash or sh code without shell quoting (the interpreter must be in the sandbox); returns exit_code, stdout and stderr."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "code", "language"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(),
			"code":             {"type": "string", "minLength": 1, "maxLength": maxCommandChars},
			"language":         {"type": "string", "enum": languages()},
			"timeout":          timeoutProp(),
			"max_output_chars": budgetProp(),
		})),
		outputSchema[ExecResult](),
		hints(false, true, false),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "run the code"
		var a runCodeArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		argv := interpreters[a.Language] // the schema's enum is interpreters' keys
		ea := execArgs{claimArgs: a.claimArgs, Command: argv[0], Args: []string{argv[1], a.Code}, Timeout: a.Timeout, MaxOutputChars: a.MaxOutputChars}
		return d.execResult(ctx, req, op, ea), nil
	}}
}
