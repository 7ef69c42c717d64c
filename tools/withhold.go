package tools

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/server"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/transfer"
)

// withheld are arguments this server takes out of a tool's input schema, each with the reason a
// model is given if it passes one anyway: arguments the operator pinned, and arguments whose
// backend is off. A key "arg=value" withholds one value of an argument's enum instead (an
// upload direction under --disable-destructive). What a model cannot use costs it nothing to read.
type withheld map[string]string

// withheldValue is the key that withholds value of arg's enum.
func withheldValue(arg, value string) string { return arg + "=" + value }

// errNoUploads is why create_transfer_url's upload direction is withheld under the operator's
// filter (transfer owns the reason; the advice is the tool's).
var errNoUploads = transfer.ErrNoUploads.Error() + ". Use direction download to fetch a file, or ask the operator for a server that allows uploads."

// errNoCustom is why image, cpus and memory are refused (and withheld) when custom sandboxes
// are off.
const errNoCustom = "this server does not build sandboxes to order (image, cpus, memory): its operator has not set " +
	"K8S_SANDBOX_CUSTOM_SANDBOXES__ALLOWED_IMAGES. Leave them out and pick a warm pool whose images fit (list_sandbox_templates)."

// withheldArgs says which of tool's arguments this server withholds.
func (d Deps) withheldArgs(tool string) withheld {
	w := withheld{}
	pinned := func(arg, setting, value string) {
		w[arg] = fmt.Sprintf("%s is fixed on this server (K8S_SANDBOX_PIN__%s=%s): leave it out.", arg, setting, value)
	}
	if d.Pinned.Namespace != "" {
		pinned("namespace", "NAMESPACE", d.Pinned.Namespace)
	}
	if tool == "create_sandbox" && d.Pinned.Warmpool != "" {
		pinned("warmpool", "WARMPOOL", d.Pinned.Warmpool)
	}
	if tool == "create_sandbox" && len(d.Pinned.Labels) > 0 {
		pinned("labels", "LABELS", labels.Set(d.Pinned.Labels).String())
	}
	if tool == "create_transfer_url" && !d.uploadsAllowed() {
		w[withheldValue("direction", transfer.Upload)] = errNoUploads
	}
	if tool == "create_sandbox" && !d.Custom.Enabled() {
		for _, a := range []string{"image", "cpus", "memory"} {
			w[a] = errNoCustom
		}
	}
	return w
}

// withPins makes a pinned namespace the default and the only one allowed, so every namespace
// rule (defaults, allowlist, "*") follows it.
func (d Deps) withPins() Deps {
	if d.Pinned.Namespace != "" {
		d.DefaultNamespace = d.Pinned.Namespace
		d.AllowedNamespaces = []string{d.Pinned.Namespace}
	}
	return d
}

// pin applies the pinned warm pool and labels to a create (the schema has refused them already;
// a pinned namespace needs nothing here: withPins made it the default and the only one allowed).
func (p Pins) pin(a *createArgs) {
	if p.Warmpool != "" {
		a.Warmpool = p.Warmpool
	}
	if len(p.Labels) > 0 {
		a.Labels = p.Labels
	}
}

// withhold removes w's arguments from st's input schema (properties and required).
func withhold(st server.ServerTool, w withheld) server.ServerTool {
	if len(w) == 0 || st.Tool.RawInputSchema == nil {
		return st
	}
	var s map[string]any
	if err := json.Unmarshal(st.Tool.RawInputSchema, &s); err != nil {
		panic(err) // static data, written by objectSchema
	}
	props, _ := s["properties"].(map[string]any)
	for a := range w {
		if arg, value, ok := strings.Cut(a, "="); ok {
			if p, _ := props[arg].(map[string]any); p != nil {
				enum, _ := p["enum"].([]any)
				p["enum"] = slices.DeleteFunc(enum, func(v any) bool { return v == value })
			}
			continue
		}
		delete(props, a)
	}
	if req, ok := s["required"].([]any); ok {
		req = slices.DeleteFunc(req, func(v any) bool { _, gone := w[v.(string)]; return gone })
		if len(req) == 0 {
			delete(s, "required")
		} else {
			s["required"] = req
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	st.Tool.RawInputSchema = b
	return st
}
