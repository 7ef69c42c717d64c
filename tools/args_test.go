package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The input schemas are compiled on each tool's first call (validated); this is the check
// that every one of them compiles, which building the server no longer does.
func TestEveryInputSchemaCompiles(t *testing.T) {
	all := All(everyTool())
	if len(all) == 0 {
		t.Fatal("no tools")
	}
	for _, st := range all {
		if _, err := newArgSchema(st.Tool); err != nil {
			t.Errorf("%s: %v", st.Tool.Name, err)
		}
	}
}

func TestBrokenSchemaFailsTheCallNotTheServer(t *testing.T) {
	broken := mcp.NewToolWithRawSchema("broken", "", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":"one"}}}`))
	if _, err := newArgSchema(broken); err == nil {
		t.Fatal("a schema with a string minimum compiled")
	}
	called := false
	st := validated(server.ServerTool{Tool: broken, Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		called = true
		return mcp.NewToolResultText("ran"), nil
	}}, nil)
	if _, err := st.Handler(context.Background(), mcp.CallToolRequest{}); err == nil || called {
		t.Errorf("call with a broken schema: err %v, handler ran %v", err, called)
	}
}

// TestCheckJudgesTheNumbersSent decodes arguments as mcp-go does (RawArguments and the
// float64 map) and checks that validating the map where it is exact, or raw where it may not
// be, gives the verdict on the numbers as written.
func TestCheckJudgesTheNumbersSent(t *testing.T) {
	tool := mcp.NewToolWithRawSchema("bounds", "", json.RawMessage(`{"type":"object","properties":{
		"n":{"type":"integer","minimum":1,"maximum":9007199254740993},"f":{"type":"number","maximum":0.3},
		"s":{"type":"string","maxLength":4},"l":{"type":"array","items":{"type":"integer"}}}}`))
	s, err := newArgSchema(tool)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args string
		ok   bool
	}{
		{`{"n":5,"s":"abcd","l":[1,2]}`, true},
		{`{"n":0}`, false},
		{`{"s":"abcde"}`, false},
		{`{"l":[1,2.5]}`, false},
		// Past 2^53 float64 rounds 9007199254740995 down to the maximum; the literal is over it.
		{`{"n":9007199254740993}`, true},
		{`{"n":9007199254740995}`, false},
		// As float64 this is 0.3, the maximum; as written it is over it.
		{`{"f":0.3}`, true},
		{`{"f":0.30000000000000001}`, false},
		{`{}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.args, func(t *testing.T) {
			var p mcp.CallToolParams
			if err := json.Unmarshal([]byte(`{"name":"bounds","arguments":`+tc.args+`}`), &p); err != nil {
				t.Fatal(err)
			}
			raw, err := s.check(p.RawArguments, p.Arguments)
			if (err == nil) != tc.ok {
				t.Fatalf("check(%s): %v, want ok %v", tc.args, err, tc.ok)
			}
			if err == nil && string(raw) != tc.args {
				t.Errorf("check returned %s, want the arguments as sent", raw)
			}
		})
	}
}

// BenchmarkCheckLargeContent is an upload's schema check with 8 MiB of content: "decoded"
// validates mcp-go's map, "raw" decodes the arguments again (what a fraction argument costs).
//
//	go test ./tools -run '^$' -bench CheckLargeContent -benchmem
func BenchmarkCheckLargeContent(b *testing.B) {
	s, err := newArgSchema(uploadTool(Deps{}).Tool)
	if err != nil {
		b.Fatal(err)
	}
	args, _ := json.Marshal(map[string]any{"sandbox_claim_name": "c", "path": "f", "content": strings.Repeat("QUFB", 2<<20)})
	var p mcp.CallToolParams
	if err := json.Unmarshal([]byte(`{"name":"upload_file","arguments":`+string(args)+`}`), &p); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		decoded any
	}{{"decoded", p.Arguments}, {"raw", nil}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.check(p.RawArguments, tc.decoded); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
