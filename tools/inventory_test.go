package tools

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

var update = flag.Bool("update", false, "rewrite testdata/tools.golden.json and outputschemas.json")

// TestToolsGolden pins the whole tool surface (names, schemas, annotations) and the resource
// templates as a client sees them over the wire. Rewrite with: go test ./tools -run Golden -update
func TestToolsGolden(t *testing.T) {
	h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.OutputSchemas = false })
	ctx := context.Background()
	tools, err := h.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	tmpls, err := h.c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(map[string]any{"tools": tools.Tools, "resourceTemplates": tmpls.ResourceTemplates}, "", "  ")
	if err != nil {
		t.Fatalf("the tool list does not serialise: %v", err)
	}
	golden := filepath.Join("testdata", "tools.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if strings.TrimSpace(string(want)) != strings.TrimSpace(string(got)) {
		t.Errorf("tools/list changed; review the diff and rerun with -update:\n%s", got)
	}
}

// TestEveryTool checks what hosts rely on for each tool.
func TestEveryTool(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readOnly := map[string]bool{"file_exists": true, "list_files": true, "download_file": true, "get_sandbox_status": true,
		"read_process_output": true, "list_processes": true, "read_file": true, "search_files": true, "list_sandbox_templates": true,
		"download_archive": true, "get_sandbox_metrics": true, "list_sandboxes": true}
	destructive := map[string]bool{"delete_sandbox": true, "execute_command": true, "upload_file": true, "run_code": true,
		"start_process": true, "signal_process": true, "edit_file": true, "move_path": true, "remove_path": true,
		"upload_archive": true, "suspend_sandbox": true}
	h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.OutputSchemas = false })
	res, err := h.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != len(All(Deps{})) {
		t.Fatalf("tools/list has %d tools, All has %d", len(res.Tools), len(All(Deps{})))
	}
	for _, tool := range res.Tools {
		t.Run(tool.Name, func(t *testing.T) {
			a := effectiveHints(tool.Annotations)
			if a.readOnly != readOnly[tool.Name] || a.destructive != destructive[tool.Name] || a.openWorld {
				t.Errorf("hints readOnly=%v destructive=%v openWorld=%v", a.readOnly, a.destructive, a.openWorld)
			}
			if tool.Title == "" || strings.TrimSpace(tool.Description) == "" {
				t.Error("title or description missing")
			}
			raw, err := json.Marshal(tool)
			if err != nil {
				t.Fatal(err)
			}
			var wire struct {
				InputSchema  map[string]any `json:"inputSchema"`
				OutputSchema map[string]any `json:"outputSchema"`
			}
			if err := json.Unmarshal(raw, &wire); err != nil {
				t.Fatal(err)
			}
			in := wire.InputSchema
			if in["type"] != "object" || in["properties"] == nil {
				t.Fatalf("input schema %v", in)
			}
			for _, k := range []string{"oneOf", "anyOf", "allOf"} {
				if _, ok := in[k]; ok {
					t.Errorf("input schema has top-level %s, which many clients reject", k)
				}
			}
			if wire.OutputSchema != nil {
				t.Errorf("an output schema at default settings (K8S_SANDBOX_OUTPUT_SCHEMAS is off)")
			}
			declared := All(Deps{OutputSchemas: true})
			i := slices.IndexFunc(declared, func(st server.ServerTool) bool { return st.Tool.Name == tool.Name })
			if raw, _ := json.Marshal(declared[i].Tool); !strings.Contains(string(raw), `"outputSchema":{`) {
				t.Errorf("no output schema with K8S_SANDBOX_OUTPUT_SCHEMAS")
			}
			if !strings.Contains(string(readme), "`"+tool.Name+"`") {
				t.Errorf("README does not document %s", tool.Name)
			}
		})
	}
}

// TestDocsNameEveryTool: the instructions and the package doc mention every tool, so a new
// tool cannot be left out of what the model and a contributor read first.
func TestDocsNameEveryTool(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	every := everyTool()
	instructions := every.instructions(All(every))
	for _, st := range All(every) {
		name := st.Tool.Name
		if !strings.Contains(instructions, name) {
			t.Errorf("Instructions do not mention %s", name)
		}
		if !strings.Contains(string(doc), name) {
			t.Errorf("tools/doc.go does not mention %s", name)
		}
	}
}
