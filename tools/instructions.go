package tools

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/output"
)

// paragraph is one sentence of the server's instructions: it is said only when every tool it
// names is listed (and, with anyOf, at least one of those), so a model is never told of a tool
// it cannot call (a toolset, read-only mode, or a backend this server lacks took it away).
type paragraph struct {
	names []string
	anyOf []string
	text  string
}

// instructionLines tell the model how the tools fit together, a line per subject of
// sentences said one by one; the numbers are the schemas' own. With every tool listed, every
// tool is named (TestDocsNameEveryTool).
func (d Deps) instructionLines() [][]paragraph {
	lifetime := fmt.Sprintf("Every sandbox is deleted automatically shutdown_after_seconds (default %d) after its last use: each call "+
		"on it renews it, up to the server's maximum lifetime.", d.defaultShutdownAfter())
	if d.FixedLifetime {
		lifetime = fmt.Sprintf("Every sandbox is deleted automatically shutdown_after_seconds (default %d) after it was created; "+
			"using it does not move that time on this server.", d.defaultShutdownAfter())
	}
	one := func(tool, text string) paragraph { return paragraph{names: []string{tool}, text: text} }
	process, workspace := toolsets["process"], toolsets["workspace"]
	return [][]paragraph{
		{{text: "Sandboxes are isolated Kubernetes pods for running commands and handling files."}},
		{{text: sharedArgsText(d.Pinned.Namespace != "")}},
		{
			{names: []string{"create_sandbox", "delete_sandbox"}, text: "Lifecycle: create_sandbox (from a warm pool; it returns " +
				"sandbox_claim_name, which the other tools take) -> work in it -> delete_sandbox when done."},
			one("list_sandbox_templates", "list_sandbox_templates shows the warm pools and what their templates allow."),
		},
		{
			{text: lifetime + " A call on an expired sandbox says so. You only see sandboxes you own."},
			one("extend_sandbox", "extend_sandbox moves the deadline before a longer pause."),
			one("get_sandbox_status", "get_sandbox_status says whether a sandbox is ready, and its shutdown_time."),
			one("list_sandboxes", `list_sandboxes lists yours (namespace "*": every namespace this server may use), also those of earlier sessions.`),
			one("create_sandbox", "Pass request_id to create_sandbox when you may retry a create: the same request_id returns the same sandbox."),
		},
		{
			one("execute_command", fmt.Sprintf("execute_command runs /bin/sh -c once (never retried) and kills the command after "+
				"timeout seconds (at most %d).", maxTimeout)),
			{anyOf: []string{"execute_command", "run_code"}, text: fmt.Sprintf("The python runtime also ends a command after %d s.",
				int(conn.PyRuntimeExecLimit.Seconds()))},
			one("run_code", "run_code runs a python, nodejs, bash or sh program without shell quoting."),
			{anyOf: []string{"execute_command", "run_code", "read_process_output"}, text: fmt.Sprintf("Output beyond max_output_chars "+
				"(default %d) keeps its beginning and end around \"[... N characters omitted ...]\"; stdout_truncated/stderr_truncated "+
				"and *_total_chars say what was cut. To see more, raise max_output_chars (up to %d) or narrow the output (grep, head, "+
				"tail, sed -n 'A,Bp'), or write it to a file and read parts of it.", output.DefaultBudget, output.MaxBudget)},
		},
		{
			one("upload_file", "upload_file writes one file (text, or base64 with binary=true)."),
			one("download_file", "download_file reads one file (binary=true: as base64)."),
			one("list_files", "list_files lists a directory."),
			one("file_exists", "file_exists checks a path."),
			{anyOf: []string{"copy_to_sandbox", "copy_from_sandbox", "create_transfer_url"}, text: "To move files or directories of " +
				"any size without their bytes passing through you:"},
			one("copy_to_sandbox", "copy_to_sandbox and copy_from_sandbox copy between the server's host (host_path, absolute, inside "+
				"the directories its operator allowed) and the sandbox;"),
			one("create_transfer_url", "create_transfer_url gives a one-time URL to upload (PUT) or download (GET) one file, "+
				"for a program or a person to use with curl."),
		},
		{
			{anyOf: process, text: "For anything that runs longer than a call or keeps running (servers, watchers, long builds, " +
				"interactive programs):"},
			one("start_process", "start_process returns a process_id at once;"),
			one("read_process_output", "read_process_output with since = the previous call's next returns only newer output "+
				"(wait_seconds waits for some; page: true reads a long log in order);"),
			one("write_process_stdin", "write_process_stdin types into a process;"),
			one("signal_process", "signal_process stops it;"),
			one("list_processes", "list_processes shows them all."),
			{anyOf: process, text: "Process ids stay valid across calls and server restarts."},
		},
		{
			{anyOf: workspace, text: "Working on code:"},
			one("search_files", "search_files finds files (glob) and lines (pattern);"),
			one("read_file", "read_file shows numbered lines of any file in ranges (offset, limit);"),
			{names: []string{"edit_file", "read_file"}, text: "edit_file replaces an exact, unique old_text (copy it from read_file " +
				"without the numbers) and shows the result;"},
			one("make_directory", "make_directory creates directories;"),
			one("move_path", "move_path moves or renames;"),
			one("remove_path", "remove_path deletes;"),
			one("upload_archive", "upload_archive unpacks a tar into a directory;"),
			one("download_archive", "download_archive packs a directory as a tar."),
			{anyOf: workspace, text: "Prefer them to shell pipelines: their output is bounded."},
		},
		{one("get_sandbox_metrics", "get_sandbox_metrics shows what your sandboxes use (CPU, memory, disk, limits, time left), for one or all of them; CPU and memory are about 15 s behind.")},
		{
			one("suspend_sandbox", "suspend_sandbox stops a sandbox's pod to save resources (running processes end; only files on "+
				"its persistent volume, volume_size at create, survive)."),
			one("resume_sandbox", "resume_sandbox starts a new pod for a suspended sandbox and waits until it is ready."),
		},
		{
			one("expose_port", "To look at a web app or API running in a sandbox (listening on 0.0.0.0), expose_port gives a URL for its port."),
			one("unexpose_port", "unexpose_port ends a port's URLs."),
		},
	}
}

// instructions are the sentences whose tools are listed, a line per subject.
func (d Deps) instructions(listed []server.ServerTool) string {
	names := toolNames(listed)
	var lines []string
	for _, line := range d.instructionLines() {
		var said []string
		for _, p := range line {
			if containsAll(names, p.names) && (len(p.anyOf) == 0 || containsAny(names, p.anyOf)) {
				said = append(said, p.text)
			}
		}
		if len(said) > 0 {
			lines = append(lines, strings.Join(said, " "))
		}
	}
	return strings.Join(lines, "\n")
}

func toolNames(listed []server.ServerTool) []string {
	names := make([]string, len(listed))
	for i, st := range listed {
		names[i] = st.Tool.Name
	}
	return names
}

func containsAll(set, want []string) bool {
	for _, w := range want {
		if !slices.Contains(set, w) {
			return false
		}
	}
	return true
}

func containsAny(set, want []string) bool {
	for _, w := range want {
		if slices.Contains(set, w) {
			return true
		}
	}
	return false
}
