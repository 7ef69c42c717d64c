package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// derivedOutputSchemas are the result types' schemas as mcp.WithOutputSchema derives them, by
// type name, as outputSchema looks them up.
func derivedOutputSchemas(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	out := map[string]json.RawMessage{}
	for _, derive := range []func(map[string]json.RawMessage) error{
		derived[CatalogResult], derived[CopyResult], derived[CreateResult], derived[DeleteResult], derived[DownloadArchiveResult],
		derived[DownloadResult], derived[EditFileResult], derived[ExecResult], derived[ExistsResult], derived[ExtendResult],
		derived[ExposeResult], derived[ListResult], derived[ListSandboxesResult], derived[MetricsResult], derived[PathResult],
		derived[ProcessInfo], derived[ProcessList], derived[ProcessOutput], derived[ReadFileResult], derived[ResumeResult], derived[TransferResult],
		derived[SearchResult], derived[SignalResult], derived[StatusResult], derived[StdinResult], derived[SuspendResult],
		derived[UnexposeResult], derived[UploadArchiveResult], derived[UploadResult],
	} {
		if err := derive(out); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// derived adds T's schema to out under T's name.
func derived[T any](out map[string]json.RawMessage) error {
	var tool mcp.Tool
	mcp.WithOutputSchema[T]()(&tool)
	raw, err := json.Marshal(tool.OutputSchema)
	if err != nil {
		return fmt.Errorf("%s: %w", reflect.TypeFor[T]().Name(), err)
	}
	out[reflect.TypeFor[T]().Name()] = raw
	return nil
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
	every := everyTool()
	every.OutputSchemas = true
	for _, st := range All(every) {
		if st.Tool.RawOutputSchema == nil {
			t.Errorf("%s: output schema derived at start, not read from outputschemas.json: add its result type to derivedOutputSchemas and rerun with -update", st.Tool.Name)
		}
	}
}
