package tools

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/server"
)

// ToolsetAll selects every toolset.
const ToolsetAll = "all"

// ToolsetMetrics is get_sandbox_metrics's set, the one tool that reads the metrics API
// (doctor checks that API only when it is listed).
const ToolsetMetrics = "metrics"

// toolsets group the tool table by what a model does with it, so an operator can give a model
// less (and a smaller tool list): each tool is in exactly one set (TestToolsetsCoverEveryTool).
var toolsets = map[string][]string{
	"sandbox": {"create_sandbox", "delete_sandbox", "get_sandbox_status", "extend_sandbox", "suspend_sandbox", "resume_sandbox",
		"list_sandboxes", "list_sandbox_templates"},
	"exec":         {"execute_command", "run_code"},
	"files":        {"upload_file", "download_file", "list_files", "file_exists", "copy_to_sandbox", "copy_from_sandbox", "create_transfer_url"},
	"workspace":    {"read_file", "edit_file", "search_files", "make_directory", "move_path", "remove_path", "upload_archive", "download_archive"},
	"process":      {"start_process", "read_process_output", "write_process_stdin", "signal_process", "list_processes"},
	"ports":        {"expose_port", "unexpose_port"},
	ToolsetMetrics: {"get_sandbox_metrics"},
}

// ToolsetNames lists the toolsets an operator may name, all included, sorted.
func ToolsetNames() []string {
	return append(slices.Sorted(maps.Keys(toolsets)), ToolsetAll)
}

// Selection is the operator's filter over the tool table. The zero value selects every tool.
type Selection struct {
	Toolsets           []string // empty or "all": every set
	ReadOnly           bool     // only tools whose readOnlyHint is true
	DisableDestructive bool     // no tool whose destructiveHint is true
}

// AllowsOverwrite says whether the selection keeps the tools that can replace a file: not under
// ReadOnly or DisableDestructive. create_transfer_url's upload URLs and the HTTP front that
// serves them follow it (an upload replaces the file at its path).
func (s Selection) AllowsOverwrite() bool { return !s.ReadOnly && !s.DisableDestructive }

// Includes reports whether the selection names the toolset, or every set (ReadOnly and
// DisableDestructive aside, which filter within sets).
func (s Selection) Includes(toolset string) bool {
	return len(s.Toolsets) == 0 || slices.Contains(s.Toolsets, ToolsetAll) || slices.Contains(s.Toolsets, toolset)
}

// Validate refuses a toolset name no set has, naming the ones there are.
func (s Selection) Validate() error {
	for _, name := range s.Toolsets {
		if _, ok := toolsets[name]; !ok && name != ToolsetAll {
			return fmt.Errorf("unknown toolset %q: use one or more of %s", name, strings.Join(ToolsetNames(), ", "))
		}
	}
	return nil
}

// keep reports whether the selection lists the tool.
func (s Selection) keep(st server.ServerTool) bool {
	h := effectiveHints(st.Tool.Annotations)
	if s.ReadOnly && !h.readOnly {
		return false
	}
	if s.DisableDestructive && h.destructive {
		return false
	}
	if len(s.Toolsets) == 0 || slices.Contains(s.Toolsets, ToolsetAll) {
		return true
	}
	for _, name := range s.Toolsets {
		if slices.Contains(toolsets[name], st.Tool.Name) {
			return true
		}
	}
	return false
}

// filter returns the tools the selection lists, in the table's order.
func (s Selection) filter(all []server.ServerTool) []server.ServerTool {
	var out []server.ServerTool
	for _, st := range all {
		if s.keep(st) {
			out = append(out, st)
		}
	}
	return out
}
