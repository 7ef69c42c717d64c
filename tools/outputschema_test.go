package tools

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// derivedOutputSchemas are the result types' schemas as mcp.WithOutputSchema derives them.
func derivedOutputSchemas(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	options := map[string]mcp.ToolOption{
		"CatalogResult": mcp.WithOutputSchema[CatalogResult](), "CreateResult": mcp.WithOutputSchema[CreateResult](),
		"DeleteResult": mcp.WithOutputSchema[DeleteResult](), "DownloadArchiveResult": mcp.WithOutputSchema[DownloadArchiveResult](),
		"DownloadResult": mcp.WithOutputSchema[DownloadResult](), "EditFileResult": mcp.WithOutputSchema[EditFileResult](),
		"ExecResult": mcp.WithOutputSchema[ExecResult](), "ExistsResult": mcp.WithOutputSchema[ExistsResult](),
		"ExposeResult": mcp.WithOutputSchema[ExposeResult](), "ListResult": mcp.WithOutputSchema[ListResult](),
		"MetricsResult": mcp.WithOutputSchema[MetricsResult](), "PathResult": mcp.WithOutputSchema[PathResult](),
		"ProcessInfo": mcp.WithOutputSchema[ProcessInfo](), "ProcessList": mcp.WithOutputSchema[ProcessList](),
		"ProcessOutput": mcp.WithOutputSchema[ProcessOutput](), "ReadFileResult": mcp.WithOutputSchema[ReadFileResult](),
		"SearchResult": mcp.WithOutputSchema[SearchResult](), "SignalResult": mcp.WithOutputSchema[SignalResult](),
		"StatusResult": mcp.WithOutputSchema[StatusResult](), "StdinResult": mcp.WithOutputSchema[StdinResult](),
		"UnexposeResult": mcp.WithOutputSchema[UnexposeResult](), "UploadArchiveResult": mcp.WithOutputSchema[UploadArchiveResult](),
		"UploadResult": mcp.WithOutputSchema[UploadResult](),
	}
	out := map[string]json.RawMessage{}
	for name, opt := range options {
		var tool mcp.Tool
		opt(&tool)
		raw, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = raw
	}
	return out
}

// TestOutputSchemasAreCurrent: outputschemas.json is what the result types derive, and every
// tool with a result type takes its schema from the file (a type missing from it would be
// derived again at every start). Rewrite with: go test ./tools -run OutputSchemas -update
func TestOutputSchemasAreCurrent(t *testing.T) {
	derived := derivedOutputSchemas(t)
	want, err := json.MarshalIndent(derived, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if *update {
		if err := os.WriteFile("outputschemas.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return // the embedded copy is the old one until the next build
	}
	if !bytes.Equal(outputSchemasFile, want) {
		t.Fatal("outputschemas.json differs from the result types' schemas: review and rerun with -update")
	}
	for _, st := range All(Deps{}) {
		if st.Tool.RawOutputSchema == nil {
			t.Errorf("%s: output schema derived at start, not read from outputschemas.json: add its result type to derivedOutputSchemas and rerun with -update", st.Tool.Name)
		}
	}
}
