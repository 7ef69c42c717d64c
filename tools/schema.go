package tools

import (
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
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

// Argument bounds and defaults. Schemas, descriptions, instructions and messages all take
// their numbers from here (and from output's budget constants).
const (
	minTimeout     = 1
	maxTimeout     = 600
	defaultTimeout = 60
	// shutdownCeiling bounds shutdown_after_seconds when the operator sets no maximum, so a
	// huge number can never wrap a time.Duration. (Its default is Deps.DefaultShutdownAfter.)
	shutdownCeiling = 365 * 24 * 3600
	// maxCommandChars keeps a command, program or edit text within one argument of exec:
	// Linux refuses a single argument over 128 KiB (MAX_ARG_STRLEN), and a character takes
	// up to 4 bytes in UTF-8.
	maxCommandChars   = 32 << 10
	maxArgv           = 4096
	maxPathChars      = 4096
	defaultMaxEntries = 1000
	maxMaxEntries     = 10000
	maxEnvVars        = 256
	// maxRequestID bounds create_sandbox's request_id; it is hashed into the claim's name
	// and kept whole in an annotation.
	maxRequestID = 64
)

// requestIDPattern keeps a request_id to characters that read back the same in any client.
const requestIDPattern = `^[A-Za-z0-9._:-]+$`

// defaultReadyTimeout is kube's, in the seconds the argument takes.
var defaultReadyTimeout = int(kube.DefaultReadyTimeout.Seconds())

// Formats name Kubernetes' own rules (apimachinery's validation) in the schemas; args.go
// checks them with the same functions the API server uses.
const (
	formatNamespace  = "k8s-namespace" // a DNS-1123 label
	formatObjectName = "k8s-name"      // a DNS-1123 subdomain
	// formatNamespaceOrAll is formatNamespace or allNamespaces.
	formatNamespaceOrAll = "k8s-namespace-or-all"
	// formatPath is a path in the sandbox: 1 to maxPathChars characters, no control characters
	// (noControl). One format in place of minLength, maxLength and pattern on every path
	// argument: the same check, a fifth of the bytes in each schema.
	formatPath = "sandbox-path"
)

// allNamespaces as a namespace argument means every namespace the operator allowed.
const allNamespaces = "*"

// noControl refuses C0 controls and DEL in paths: a NUL or CR/LF is never what the model
// meant, and would otherwise reach the runtime.
const noControl = `^[^\x00-\x1f\x7f]*$`

// Arguments whose schemas carry no description (shared ones the instructions explain once,
// sharedArgsText, and those whose name, type and tool say enough) keep their rule here, for a
// message about a bad or missing value.
var argRules = map[string]string{
	"sandbox_claim_name":     "Claim name returned by create_sandbox (sandbox_claim_name).",
	"namespace":              namespaceRule(false),
	"timeout":                "Seconds to wait.",
	"process_id":             "The process_id start_process returned.",
	"max_output_chars":       "The stdout+stderr character budget.",
	"since":                  "The offsets already read: the previous answer's next.",
	"wait_seconds":           "Seconds to wait for new output or the end.",
	"sandbox_ready_timeout":  "Seconds to wait for the sandbox to be ready.",
	"shutdown_after_seconds": "Seconds before automatic deletion.",
	"code":                   "The program's source code.",
	"old_text":               "The exact text to replace, copied from read_file without line numbers.",
	"content":                "The file's text, or base64 with binary=true.",
	"max_results":            "How many results at most.",
	"max_entries":            "How many entries at most.",
}

// namespaceRule is what a message about a bad namespace says; orAll: the tool also takes "*".
func namespaceRule(orAll bool) string {
	all := ""
	if orAll {
		all = fmt.Sprintf(", or %q for every namespace this server may use", allNamespaces)
	}
	return fmt.Sprintf("Kubernetes namespace of the sandbox: lowercase letters, digits and '-', starting and ending "+
		"with a letter or digit, at most %d characters%s. Defaults to the server's current namespace.", validation.DNS1123LabelMaxLength, all)
}

// sharedArgsText is the instructions' sentence on the shared arguments; pinned: namespace is fixed.
func sharedArgsText(pinned bool) string {
	ns := fmt.Sprintf("namespace is the sandbox's Kubernetes namespace (leave it out for the server's own; where a tool lists, %q "+
		"means every namespace this server may use); ", allNamespaces)
	if pinned {
		ns = ""
	}
	return "Arguments most tools share: sandbox_claim_name names a sandbox (the name its create returned); " + ns +
		"path is inside the sandbox, relative to its working directory (a leading / is relative to it too; \".\" is the " +
		"working directory); timeout and *_seconds are in seconds, within the bounds their schemas give."
}

// The Kubernetes name formats own their lengths too (apimachinery's checks include them), so
// the schemas carry no minLength or maxLength beside them.
func claimProp() prop {
	return prop{"type": "string", "format": formatObjectName}
}

// withDescription is p with another description.
func withDescription(p prop, description string) prop {
	q := prop{}
	for k, v := range p {
		q[k] = v
	}
	q["description"] = description
	return q
}

// optionalClaimProp is claimProp where leaving it out means every sandbox of the caller.
func optionalClaimProp() prop {
	return withDescription(claimProp(), "Leave it out for all yours.")
}

func namespaceProp() prop {
	return prop{"type": "string", "format": formatNamespace}
}

// namespaceOrAllProp is a namespace argument of a tool that can also look across the allowlist.
func namespaceOrAllProp() prop {
	return prop{"type": "string", "format": formatNamespaceOrAll} // "*": sharedArgsText
}

func warmpoolProp() prop {
	return prop{"type": "string", "format": formatObjectName,
		"description": "From list_sandbox_templates."}
}

// intProp is a bounded integer. Its bounds and default are the schema's keywords, which models
// read; the description does not say them again, and a range error quotes them (rangeSentence).
func intProp(lead string, min, max, def int) prop {
	return described(prop{"type": "integer", "minimum": min, "maximum": max, "default": def}, lead, ".")
}

// described is p with the description text+end, or none when text is "": an argument whose
// name, type and tool say enough (or that the instructions explain) costs no prose.
func described(p prop, text, end string) prop {
	if text != "" {
		p["description"] = text + end
	}
	return p
}

// withDefault is p with a default the handler applies too.
func withDefault(p prop, def any) prop {
	p["default"] = def
	return p
}

// timeoutProp is a shared argument (sharedArgsText): bounds and default only.
func timeoutProp() prop {
	return prop{"type": "integer", "minimum": minTimeout, "maximum": maxTimeout, "default": defaultTimeout}
}

// pathProp is a path argument; what, when not "", says which path it is beyond the shared rule
// the instructions give (sharedArgsText).
func pathProp(what string) prop {
	return described(prop{"type": "string", "format": formatPath}, what, "")
}

// patternRules say in words what a pattern wants, for the message of a value that breaks it.
var patternRules = map[string]string{
	requestIDPattern: fmt.Sprintf("Use up to %d letters, digits, '.', '_', ':' or '-'.", maxRequestID),
}

// formatRules say in words what a format wants, for the message of a value that breaks it.
var formatRules = map[string]string{
	formatPath:       fmt.Sprintf("A path of 1 to %d characters, without control characters.", maxPathChars),
	formatObjectName: fmt.Sprintf("A Kubernetes object name: lowercase letters, digits, '-' and '.', at most %d characters.", validation.DNS1123SubdomainMaxLength),
}

func cwdProp() prop {
	return pathProp("Working directory (must exist).")
}

func envProp() prop {
	return prop{"type": "object", "maxProperties": maxEnvVars, "additionalProperties": prop{"type": "string"},
		"description": "Variables to add."}
}

// checkEnv refuses a variable name no shell can export.
func checkEnv(env map[string]string) error {
	for k := range env {
		if !conn.ValidEnvName(k) {
			return badInput("env name %q is not valid: use letters, digits and '_', not starting with a digit", k)
		}
	}
	return nil
}

func stringMapProp(desc string) prop {
	return described(prop{"type": "object", "additionalProperties": prop{"type": "string"}}, desc, "")
}

func boolProp(desc string) prop {
	return described(prop{"type": "boolean"}, desc, "") // false when left out, as a model assumes
}

func budgetProp() prop {
	return intProp("", output.MinBudget, output.MaxBudget, output.DefaultBudget) // explained in the instructions
}

// intArg reads an optional integer argument the schema has already bounded.
func intArg(v *int, def int) int {
	if v == nil {
		return def
	}
	return *v
}

// hints sets the annotation hints that differ from the MCP spec's defaults (readOnly false,
// destructive true, idempotent false, openWorld true), which mean the same to a client and cost
// every tool/list nothing (they were 2.7 KB spelled out). destructive and idempotent only mean
// something for a tool that is not read-only, as the spec says. No tool reaches beyond the
// cluster, so openWorld is false on every tool. effectiveHints reads them back.
func hints(readOnly, destructive, idempotent bool) mcp.ToolOption {
	return func(t *mcp.Tool) {
		a := &t.Annotations
		a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint = nil, nil, nil
		a.OpenWorldHint = mcp.ToBoolPtr(false)
		if readOnly {
			a.ReadOnlyHint = mcp.ToBoolPtr(true)
			return
		}
		if !destructive {
			a.DestructiveHint = mcp.ToBoolPtr(false)
		}
		if idempotent {
			a.IdempotentHint = mcp.ToBoolPtr(true)
		}
	}
}

// toolHints are a tool's annotation hints with the spec's defaults applied.
type toolHints struct{ readOnly, destructive, idempotent, openWorld bool }

func effectiveHints(a mcp.ToolAnnotation) toolHints {
	or := func(p *bool, def bool) bool {
		if p == nil {
			return def
		}
		return *p
	}
	h := toolHints{readOnly: or(a.ReadOnlyHint, false), destructive: or(a.DestructiveHint, true),
		idempotent: or(a.IdempotentHint, false), openWorld: or(a.OpenWorldHint, true)}
	if h.readOnly {
		h.destructive = false // a tool that changes nothing destroys nothing
	}
	return h
}
