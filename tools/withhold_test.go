package tools

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// schemaArgs reads a listed tool's argument names and required ones from its input schema.
func schemaArgs(t *testing.T, st server.ServerTool) (props []string, required []string) {
	t.Helper()
	var s struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal(st.Tool.RawInputSchema, &s); err != nil {
		t.Fatalf("%s: %v", st.Tool.Name, err)
	}
	return slices.Sorted(maps.Keys(s.Properties)), s.Required
}

var testPins = Pins{Namespace: "team-a", Warmpool: "pool-a", Labels: map[string]string{"team": "a"}}

// TestPinnedArgumentsLeaveTheSchemas: a pinned argument is in no tool's schema, and a
// required one (warmpool) is no longer required.
func TestPinnedArgumentsLeaveTheSchemas(t *testing.T) {
	for _, st := range All(Deps{Pinned: testPins}) {
		props, required := schemaArgs(t, st)
		for _, gone := range []string{"namespace", "warmpool", "labels"} {
			if slices.Contains(props, gone) || slices.Contains(required, gone) {
				t.Errorf("%s still takes %s: %v (required %v)", st.Tool.Name, gone, props, required)
			}
		}
	}
	// Unpinned, they are there.
	for _, st := range All(Deps{}) {
		if props, _ := schemaArgs(t, st); st.Tool.Name == "create_sandbox" && !slices.Contains(props, "warmpool") {
			t.Errorf("create_sandbox without pins lacks warmpool: %v", props)
		}
	}
}

// TestPinnedArgumentsAreEnforced: a create without the pinned arguments gets the operator's
// values; a call that passes one is refused with the setting, and nothing is created.
func TestPinnedArgumentsAreEnforced(t *testing.T) {
	h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.Pinned = testPins })
	res := h.call(t, "create_sandbox", map[string]any{})
	if res.IsError {
		t.Fatalf("create with pins: %s", text(res))
	}
	if len(h.claims.created) != 1 {
		t.Fatalf("%d creates", len(h.claims.created))
	}
	got := h.claims.created[0]
	if got.Namespace != "team-a" || got.WarmPool != "pool-a" || !maps.Equal(got.Labels, map[string]string{"team": "a"}) {
		t.Errorf("created in %q from %q with labels %v; want team-a, pool-a, team=a", got.Namespace, got.WarmPool, got.Labels)
	}
	claim := res.StructuredContent.(map[string]any)["sandbox_claim_name"]
	if res := h.call(t, "get_sandbox_status", map[string]any{"sandbox_claim_name": claim}); res.IsError {
		t.Errorf("status in the pinned namespace without passing it: %s", text(res))
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"create_sandbox", map[string]any{"warmpool": "other"}, "warmpool is fixed on this server (K8S_SANDBOX_PIN__WARMPOOL=pool-a): leave it out."},
		{"create_sandbox", map[string]any{"labels": map[string]any{"team": "b"}}, "labels is fixed on this server (K8S_SANDBOX_PIN__LABELS=team=a): leave it out."},
		{"execute_command", map[string]any{"sandbox_claim_name": claim, "namespace": "team-b", "command": "true"},
			"namespace is fixed on this server (K8S_SANDBOX_PIN__NAMESPACE=team-a): leave it out."},
		{"list_sandboxes", map[string]any{"namespace": "*"}, "namespace is fixed on this server (K8S_SANDBOX_PIN__NAMESPACE=team-a): leave it out."},
	} {
		res := h.call(t, c.tool, c.args)
		if !res.IsError || text(res) != c.want {
			t.Errorf("%s %v: %q, want the error %q", c.tool, c.args, text(res), c.want)
		}
	}
	if len(h.claims.created) != 1 {
		t.Errorf("refused calls created claims: %d in all", len(h.claims.created))
	}
}

// TestCustomArgumentsOnlyWhereEnabled: image, cpus and memory are listed only where custom
// sandboxes are on; passed anyway, the refusal says which setting turns them on.
func TestCustomArgumentsOnlyWhereEnabled(t *testing.T) {
	create := func(d Deps) []string {
		for _, st := range All(d) {
			if st.Tool.Name == "create_sandbox" {
				props, _ := schemaArgs(t, st)
				return props
			}
		}
		t.Fatal("no create_sandbox")
		return nil
	}
	on := Deps{Custom: kube.CustomPolicy{AllowedImages: []string{"python:*"}}}
	for _, arg := range []string{"image", "cpus", "memory"} {
		if slices.Contains(create(Deps{}), arg) {
			t.Errorf("custom sandboxes off, create_sandbox still lists %s", arg)
		}
		if !slices.Contains(create(on), arg) {
			t.Errorf("custom sandboxes on, create_sandbox lacks %s", arg)
		}
	}
	h := newHarness(t)
	if res := h.call(t, "create_sandbox", map[string]any{"warmpool": "p", "image": "python:3"}); !res.IsError || text(res) != errNoCustom {
		t.Errorf("image with custom sandboxes off: %q", text(res))
	}
}
