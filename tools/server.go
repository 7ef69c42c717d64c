package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/sync/singleflight"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/output"
)

// Instructions tell the model how the tools fit together; every tool is named, and the
// numbers are the schemas' own.
var Instructions = fmt.Sprintf(`Sandboxes are isolated Kubernetes pods for running commands and handling files.
Lifecycle: create_sandbox (from a warm pool; list_sandbox_templates shows the pools when you do not know one; returns sandbox_claim_name) -> execute_command, run_code, upload_file,
download_file, list_files, file_exists, get_sandbox_status with that name -> delete_sandbox when done.
Every sandbox is deleted automatically shutdown_after_seconds (default %d) after its last use: each call on it
renews it, up to the server's maximum lifetime; extend_sandbox moves the deadline before a longer pause, and
get_sandbox_status shows it. A call on an expired sandbox says so: create a new one. You only see sandboxes you own; list_sandboxes lists them
(namespace "*": every namespace this server may use), also those of earlier sessions. Pass request_id to
create_sandbox when you may retry a create: the same request_id returns the same sandbox.
execute_command runs /bin/sh -c once (never retried) and kills the command after timeout seconds (at most %d);
run_code runs a python, nodejs, bash or sh program without shell quoting. Output beyond
max_output_chars (default %d) keeps its beginning and end around "[... N characters omitted ...]";
stdout_truncated/stderr_truncated and *_total_chars say what was cut. To see more, raise max_output_chars
(up to %d) or narrow the output (grep, head, tail, sed -n 'A,Bp'), or write it to a file and download parts.
For anything that runs longer than a call or keeps running (servers, watchers, long builds, interactive programs):
start_process returns a process_id at once; read_process_output with since = the previous call's next returns only
newer output (wait_seconds waits for some; page: true reads a long log in order); write_process_stdin types into it;
signal_process stops it; list_processes shows them all. Process ids stay valid across calls and server restarts.
Working on code: search_files finds files (glob) and lines (pattern); read_file shows numbered lines of any file in ranges
(offset, limit); edit_file replaces an exact, unique old_text (copy it from read_file without the numbers) and shows the
result; make_directory, move_path and remove_path manage the tree; upload_archive and download_archive move a whole
directory as a tar. Prefer them to shell pipelines: their output is bounded.
get_sandbox_metrics shows what your sandboxes use (CPU, memory, disk, limits, time left), for one or all of them.
suspend_sandbox stops a sandbox's pod to save resources (running processes end; only files on its persistent volume,
create_sandbox's volume_size, survive); resume_sandbox starts a new pod and waits until it is ready.
To look at a web app or API running in a sandbox (listening on 0.0.0.0), expose_port gives a URL for its port;
unexpose_port ends it.`,
	defaultShutdownAfter, maxTimeout, output.DefaultBudget, output.MaxBudget)

// All returns every tool, in the order tools/list shows them, each checked against its own
// input schema before its handler runs.
func All(d Deps) []server.ServerTool {
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
	for i := range all {
		all[i] = validated(all[i])
	}
	return d.Selection.filter(all)
}

// NewServer builds the MCP server with every tool and the sandboxes resource template.
func NewServer(d Deps, version string, opts ...server.ServerOption) *server.MCPServer {
	base := []server.ServerOption{
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithInstructions(Instructions),
		server.WithRecovery(),
		server.WithResourceRecovery(),
		server.WithToolHandlerMiddleware(d.logCalls),
	}
	s := server.NewMCPServer("k8s-sandbox-mcp", version, append(base, opts...)...)
	s.AddTools(All(d)...)
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
