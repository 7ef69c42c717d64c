package tools

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// TestPromptsNameListedTools: each workflow prompt is offered only where every tool it names is
// listed, and its text names only listed tools.
func TestPromptsNameListedTools(t *testing.T) {
	every := All(Deps{})
	for _, sel := range []Selection{{}, {ReadOnly: true}, {Toolsets: []string{"exec"}}, {Toolsets: []string{"workspace", "files"}}} {
		listed := All(Deps{Selection: sel})
		var got []string
		for _, p := range prompts(listed) {
			got = append(got, p.Prompt.Name)
			args := map[string]string{}
			for _, a := range p.Prompt.Arguments {
				args[a.Name] = "x"
			}
			res, err := p.Handler(context.Background(), mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: p.Prompt.Name, Arguments: args}})
			if err != nil {
				t.Fatalf("%s: %v", p.Prompt.Name, err)
			}
			text := res.Messages[0].Content.(mcp.TextContent).Text
			for _, st := range every {
				named := regexp.MustCompile(`\b` + st.Tool.Name + `\b`).MatchString(text)
				if named && !slices.ContainsFunc(listed, func(l server.ServerTool) bool { return l.Tool.Name == st.Tool.Name }) {
					t.Errorf("%+v: prompt %s names %s, which is not listed", sel, p.Prompt.Name, st.Tool.Name)
				}
			}
		}
		want := map[string][]string{"": {"run_tests", "preview_web_app", "explore_repository"}, "read-only": {"explore_repository"},
			"exec": nil, "workspace,files": {"explore_repository"}}
		key := strings.Join(sel.Toolsets, ",")
		if sel.ReadOnly {
			key = "read-only"
		}
		if !slices.Equal(got, want[key]) {
			t.Errorf("%+v: prompts %v, want %v", sel, got, want[key])
		}
	}
}

// TestPromptsOverTheProtocol: prompts/get fills in the arguments and refuses a missing
// required one; completion/complete offers warm pools and allowed namespaces.
func TestPromptsOverTheProtocol(t *testing.T) {
	h := newHarness(t, func(d *Deps, f *fakeClaims) {
		d.AllowedNamespaces = []string{"team-a", "team-b", "other"}
		d.DefaultNamespace = "team-a"
		f.pools = map[string][]kube.Pool{"team-a": {{Name: "python-pool"}, {Name: "sandboxd-pool"}}}
	})
	ctx := context.Background()
	res, err := h.c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "run_tests",
		Arguments: map[string]string{"test_command": "go test ./...", "warmpool": "sandboxd-pool"}}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Messages[0].Content.(mcp.TextContent).Text; !strings.Contains(text, "start_process: go test ./...") ||
		!strings.Contains(text, `create_sandbox with warmpool "sandboxd-pool"`) {
		t.Errorf("run_tests text: %s", text)
	}
	if _, err := h.c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "run_tests"}}); err == nil ||
		!strings.Contains(err.Error(), "needs test_command") {
		t.Errorf("run_tests without test_command: %v", err)
	}
	complete := func(ref any, arg, value string) []string {
		t.Helper()
		r, err := h.c.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteArgument{Name: arg, Value: value}}})
		if err != nil {
			t.Fatal(err)
		}
		return r.Completion.Values
	}
	if got := complete(mcp.PromptReference{Type: "ref/prompt", Name: "run_tests"}, "warmpool", "py"); !slices.Equal(got, []string{"python-pool"}) {
		t.Errorf("warmpool completion: %v", got)
	}
	if got := complete(mcp.ResourceReference{Type: "ref/resource", URI: "sandboxes://{namespace}"}, "namespace", "team"); !slices.Equal(got, []string{"team-a", "team-b"}) {
		t.Errorf("namespace completion: %v", got)
	}
}
