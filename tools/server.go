package tools

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/sync/singleflight"
)

// All returns every tool, in the order tools/list shows them, each checked against its own
// input schema before its handler runs.
func All(d Deps) []server.ServerTool {
	d = d.withPins()
	if d.quota == nil {
		d.quota = newQuota() // shared by the tools built here
	}
	if d.collecting == nil {
		d.collecting = &singleflight.Group{}
	}
	all := []server.ServerTool{
		catalogTool(d), listSandboxesTool(d), metricsTool(d), exposeTool(d), unexposeTool(d), createTool(d), deleteTool(d), execTool(d), uploadTool(d), downloadTool(d),
		listTool(d), existsTool(d), statusTool(d), extendTool(d), suspendTool(d), resumeTool(d), runCodeTool(d),
		startProcessTool(d), readProcessTool(d), writeProcessTool(d), signalProcessTool(d), listProcessesTool(d),
		readFileTool(d), editFileTool(d), searchFilesTool(d), makeDirectoryTool(d), movePathTool(d), removePathTool(d),
		uploadArchiveTool(d), downloadArchiveTool(d),
	}
	// Listed only where they can work: the operator allowed host directories; HTTP serves URLs.
	if d.HostFS.Enabled() {
		all = append(all, copyToSandboxTool(d), copyFromSandboxTool(d))
	}
	if d.Transfers != nil {
		all = append(all, transferTool(d))
	}
	for i := range all {
		w := d.withheldArgs(all[i].Tool.Name)
		all[i] = validated(withhold(all[i], w), w)
		if !d.OutputSchemas {
			// MCP makes them optional and models do not read them; declared, they were 16 KB
			// of every tools/list. The types stay their one owner (outputschema.go).
			all[i].Tool.RawOutputSchema, all[i].Tool.OutputSchema = nil, mcp.ToolOutputSchema{}
		}
	}
	return d.Selection.filter(all)
}

// NewServer builds the MCP server with every tool and the sandboxes resource template.
func NewServer(d Deps, version string, opts ...server.ServerOption) *server.MCPServer {
	d = d.withPins()
	base := []server.ServerOption{
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		// logging/setLevel per session; what is sent is app.go's (serve.ClientLog).
		server.WithLogging(),
		server.WithIcons(serverIcon()),
		server.WithRecovery(),
		server.WithResourceRecovery(),
		server.WithToolHandlerMiddleware(d.logCalls),
		server.WithToolHandlerMiddleware(deadlineNotes),
	}
	listed := All(d)
	workflows := d.prompts(listed)
	base = append(base, server.WithInstructions(d.instructions(listed)), server.WithCompletions(),
		server.WithPromptCompletionProvider(completer{d}), server.WithResourceCompletionProvider(completer{d}))
	if len(workflows) > 0 {
		base = append(base, server.WithPromptCapabilities(false))
	}
	s := server.NewMCPServer("k8s-sandbox-mcp", version, append(base, opts...)...)
	s.AddTools(listed...)
	s.AddPrompts(workflows...)
	s.AddResourceTemplates(sandboxesTemplate(d))
	return s
}

// audited are the tools whose calls leave an Event on the claim: creates, deletes, commands.
var audited = map[string]bool{"create_sandbox": true, "delete_sandbox": true, "execute_command": true, "run_code": true, "start_process": true}

func structuredOf(res *mcp.CallToolResult) any {
	if res == nil {
		return nil
	}
	return res.StructuredContent
}

// who names the caller on audit Events: the principal where there is one, else the owner.
func (d Deps) who(ctx context.Context, owner string) string {
	if d.Who != nil {
		if w := d.Who(ctx); w != "" {
			return w
		}
	}
	if d.Principal != nil {
		if p, err := d.Principal(ctx); err == nil && p != "" {
			return p
		}
	}
	return owner
}

// logCalls writes one line per tool call: who, what, where, how long, how it ended. Never
// arguments' content, file data or output.
func (d Deps) logCalls(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		d.observe().CallStarted(req.Params.Name)
		res, err := next(ctx, req)
		owner, _ := d.Owner(ctx)
		ns, _ := req.GetArguments()["namespace"].(string)
		if ns == "" {
			ns = d.DefaultNamespace
		}
		claim, _ := req.GetArguments()["sandbox_claim_name"].(string)
		ev := d.Log.Info()
		outcome := "ok"
		switch {
		case err != nil:
			ev, outcome = d.Log.Error().Err(err), "protocol_error"
		case res != nil && res.IsError:
			ev, outcome = d.Log.Warn(), "tool_error"
		case ctx.Err() != nil:
			outcome = "cancelled"
		}
		ev.Str("tool", req.Params.Name).Str("owner", owner).Str("namespace", ns).Str("claim", claim).
			Dur("duration", time.Since(start)).Str("outcome", outcome).Msg("tool call")
		d.observe().CallEnded(req.Params.Name, outcome, time.Since(start))
		if audited[req.Params.Name] {
			if cr, ok := structuredOf(res).(CreateResult); ok && claim == "" {
				ns, claim = cr.Namespace, cr.SandboxClaimName
			}
			if claim != "" && outcome != "protocol_error" {
				d.Claims.Audit(ns, claim, owner, d.who(ctx, owner), req.Params.Name, outcome, time.Since(start))
			}
		}
		return res, err
	}
}
