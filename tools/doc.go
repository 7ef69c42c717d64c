// Package tools holds the MCP surface of k8s-sandbox-mcp: one handler per tool of the spec
// (create_sandbox, delete_sandbox, execute_command, upload_file, download_file, list_files,
// file_exists, get_sandbox_status), extend_sandbox (lifetime.go; renewal on use is kube's),
// suspend_sandbox and resume_sandbox (suspend.go: the Sandbox's operatingMode through kube;
// resolve in common.go refuses or auto-resumes a suspended one), run_code, list_sandbox_templates (catalog.go), list_sandboxes (sandboxes.go:
// the caller's claims from the API, so it sees what other sessions, restarts and replicas made), get_sandbox_metrics
// (metrics.go: metrics.k8s.io through kube, disk and a cgroup fallback through conn/usage),
// expose_port and unexpose_port (ports.go, served by internal/ports through the Ports interface), the process tools (start_process,
// read_process_output, write_process_stdin, signal_process, list_processes: process.go, whose
// state lives in the sandbox through conn/proc), the workspace tools (read_file, edit_file,
// search_files, make_directory, move_path, remove_path, upload_archive, download_archive: edit.go,
// paths.go and archive.go, run in the sandbox through conn/workspace), the streamed copies
// between allowed host directories and sandboxes (copy_to_sandbox, copy_from_sandbox:
// hostcopy.go, the host side in internal/hostfs) and one-time transfer URLs
// (create_transfer_url: transfer.go, served by internal/transfer), listed only where their
// backend is on, and the sandboxes://{namespace} resource template.
// The instructions (instructions.go) and the workflow prompts and completions (prompts.go) are
// built from the tools listed, and withhold.go takes pinned or unusable arguments out of the
// schemas; toolsets.go's Selection filters the one table (All). icon.go is the server's icon.
// Every call is checked against its tool's input schema first (args.go), which owns the
// arguments' bounds, defaults and the messages that name them.
//
// Error contract: a failure the model can act on (bad input, a missing or foreign sandbox, a
// timeout, an unreachable API) is an isError result whose text says what to do next and
// carries no structuredContent; a Go error is returned only for bugs. Handlers call kube for
// claims, conn for the runtime inside the sandbox and output for the budget.
package tools
