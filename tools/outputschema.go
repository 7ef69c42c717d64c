package tools

import (
	_ "embed"
	"encoding/json"
	"reflect"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// The result types are the one owner of their output schemas; outputschemas.json is what
// mcp.WithOutputSchema derives from them, written at development time because deriving them at
// start (reflection, then marshalling and decoding every schema) was most of building the
// server: 10-25 ms of every start, before the first answer. TestOutputSchemasAreCurrent fails
// when a type and the file disagree; `go test ./tools -run OutputSchemas -update` rewrites it.
//
//go:embed outputschemas.json
var outputSchemasFile []byte

// generatedOutputSchemas are outputSchemasFile's schemas by result type name.
var generatedOutputSchemas = sync.OnceValue(func() map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(outputSchemasFile, &m); err != nil {
		panic(err) // static data: every test reads it
	}
	return m
})

// outputSchema is mcp.WithOutputSchema[T] from the generated file. A type missing from it
// falls back to deriving the schema at start: slower, never wrong (and the test fails).
func outputSchema[T any]() mcp.ToolOption {
	return func(t *mcp.Tool) {
		if raw, ok := generatedOutputSchemas()[reflect.TypeFor[T]().Name()]; ok {
			t.RawOutputSchema = raw
			return
		}
		mcp.WithOutputSchema[T]()(t)
	}
}
