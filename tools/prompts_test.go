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
		for _, p := range (Deps{Selection: sel}).prompts(listed) {
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

// TestPromptsUnderAPinnedPool: with the warm pool pinned, as create_sandbox's schema withholds
// warmpool, no prompt offers it, names it or follows one a client passes anyway, and its
// completion offers nothing; without the pin, both prompts that create take it.
func TestPromptsUnderAPinnedPool(t *testing.T) {
	for _, tc := range []struct {
		name string
		pin  string
		want bool // warmpool offered and followed
	}{{"not pinned", "", true}, {"pinned", "sandboxd-pool", false}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(d *Deps, f *fakeClaims) {
				d.Pinned.Warmpool = tc.pin
				f.pools = map[string][]kube.Pool{"default": {{Name: "python-pool"}}}
			})
			ctx := context.Background()
			list, err := h.c.ListPrompts(ctx, mcp.ListPromptsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			offered := 0
			for _, p := range list.Prompts {
				args := map[string]string{"warmpool": "python-pool"}
				for _, a := range p.Arguments {
					if a.Name == "warmpool" {
						offered++
					}
					if a.Required {
						args[a.Name] = "x"
					}
				}
				res, err := h.c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: p.Name, Arguments: args}})
				if err != nil {
					t.Fatal(err)
				}
				text := res.Messages[0].Content.(mcp.TextContent).Text
				if followed := strings.Contains(text, "python-pool"); followed != tc.want && p.Name != "explore_repository" {
					t.Errorf("%s follows the warmpool passed: %v, want %v:\n%s", p.Name, followed, tc.want, text)
				}
				if !tc.want && strings.Contains(text+p.Description, "warmpool") {
					t.Errorf("%s names warmpool under a pinned pool:\n%s", p.Name, text)
				}
			}
			if wantOffered := map[bool]int{true: 2, false: 0}[tc.want]; offered != wantOffered {
				t.Errorf("warmpool offered by %d prompts, want %d", offered, wantOffered)
			}
			r, err := h.c.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{Ref: mcp.PromptReference{Type: "ref/prompt", Name: "run_tests"},
				Argument: mcp.CompleteArgument{Name: "warmpool", Value: "py"}}})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(r.Completion.Values) > 0; got != tc.want {
				t.Errorf("warmpool completion %v", r.Completion.Values)
			}
		})
	}
}
