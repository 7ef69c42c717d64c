package tools

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/output"
)

// inputSchema sets a hand-written input schema. mcp.WithRawInputSchema keeps NewTool's default
// InputSchema too, and a tool with both fails to serialise.
func inputSchema(raw json.RawMessage) mcp.ToolOption {
	return func(t *mcp.Tool) {
		t.InputSchema = mcp.ToolInputSchema{}
		t.RawInputSchema = raw
	}
}

// Input schemas are written out by hand: the spec's defaults and bounds belong in the schema
// the model reads, and shutdown_after_seconds needs integer-or-null, which struct tags can't say.
type prop = map[string]any

func objectSchema(required []string, props map[string]prop) json.RawMessage {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // static data: a failure is a programming error caught by every test
	}
	return b
}

const (
	minTimeout     = 1
	maxTimeout     = 600
	defaultTimeout = 60
)

func claimProp() prop {
	return prop{"type": "string", "minLength": 1, "maxLength": 253,
		"description": "Claim name returned by create_sandbox (sandbox_claim_name)."}
}

func namespaceProp() prop {
	return prop{"type": "string", "maxLength": 63,
		"description": "Kubernetes namespace of the sandbox. Defaults to the server's current namespace."}
}

func timeoutProp(what string) prop {
	return prop{"type": "integer", "minimum": minTimeout, "maximum": maxTimeout, "default": defaultTimeout,
		"description": "Seconds to wait for " + what + " (1-600, default 60)."}
}

func pathProp(what string) prop {
	return prop{"type": "string", "minLength": 1, "maxLength": 4096, "description": what}
}

func stringMapProp(desc string) prop {
	return prop{"type": "object", "additionalProperties": prop{"type": "string"}, "description": desc}
}

func boolProp(desc string) prop {
	return prop{"type": "boolean", "default": false, "description": desc}
}

func budgetProp() prop {
	return prop{"type": "integer", "minimum": output.MinBudget, "maximum": output.MaxBudget, "default": output.DefaultBudget,
		"description": "Combined stdout+stderr character budget, including omission markers (128-300000, default 30000)."}
}

// hints sets all four annotation hints, as every tool must (mcp.NewTool's defaults claim
// destructive and open-world). No tool reaches beyond the cluster, so openWorld is false.
func hints(readOnly, destructive, idempotent bool) mcp.ToolOption {
	return func(t *mcp.Tool) {
		t.Annotations.ReadOnlyHint = mcp.ToBoolPtr(readOnly)
		t.Annotations.DestructiveHint = mcp.ToBoolPtr(destructive)
		t.Annotations.IdempotentHint = mcp.ToBoolPtr(idempotent)
		t.Annotations.OpenWorldHint = mcp.ToBoolPtr(false)
	}
}
