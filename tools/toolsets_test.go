package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/hostfs"
)

// everyTool lists every tool of the table, also those listed only where their backend is on
// (host directories for the copy tools, an HTTP front for transfer URLs).
func everyTool() Deps {
	return Deps{HostFS: hostfs.New([]string{os.TempDir()}), Transfers: noTransfers{}}
}

type noTransfers struct{}

func (noTransfers) Create(context.Context, string, string, string, string, string, time.Duration) (string, time.Time, error) {
	return "", time.Time{}, errors.New("no transfers here")
}

func names(d Deps) []string {
	var out []string
	for _, st := range All(d) {
		out = append(out, st.Tool.Name)
	}
	return out
}

// TestToolsetsCoverEveryTool: each tool of the table is in exactly one toolset, and every
// toolset names only tools that exist, so a new tool cannot be left out of every set.
func TestToolsetsCoverEveryTool(t *testing.T) {
	in := map[string]string{}
	for set, tools := range toolsets {
		for _, name := range tools {
			if other, ok := in[name]; ok {
				t.Errorf("%s is in toolsets %s and %s", name, other, set)
			}
			in[name] = set
		}
	}
	all := names(everyTool())
	for _, name := range all {
		if in[name] == "" {
			t.Errorf("%s is in no toolset", name)
		}
	}
	for name := range in {
		if !slices.Contains(all, name) {
			t.Errorf("toolset %s names %s, which is not a tool", in[name], name)
		}
	}
}

func TestSelection(t *testing.T) {
	all := All(Deps{})
	readOnly := func(name string) bool {
		for _, st := range all {
			if st.Tool.Name == name {
				return effectiveHints(st.Tool.Annotations).readOnly
			}
		}
		t.Fatalf("no tool %s", name)
		return false
	}
	destructive := func(name string) bool {
		for _, st := range all {
			if st.Tool.Name == name {
				return effectiveHints(st.Tool.Annotations).destructive
			}
		}
		return true
	}
	tests := []struct {
		name  string
		sel   Selection
		check func(t *testing.T, got []string)
	}{
		{"zero value lists every tool", Selection{}, func(t *testing.T, got []string) {
			if len(got) != len(all) {
				t.Errorf("%d tools, want %d", len(got), len(all))
			}
		}},
		{"all", Selection{Toolsets: []string{"all"}}, func(t *testing.T, got []string) {
			if len(got) != len(all) {
				t.Errorf("%d tools, want %d", len(got), len(all))
			}
		}},
		{"one set", Selection{Toolsets: []string{"exec"}}, func(t *testing.T, got []string) {
			if !slices.Equal(got, []string{"execute_command", "run_code"}) {
				t.Errorf("exec lists %v", got)
			}
		}},
		{"two sets, table order", Selection{Toolsets: []string{"metrics", "ports"}}, func(t *testing.T, got []string) {
			if !slices.Equal(got, []string{"get_sandbox_metrics", "expose_port", "unexpose_port"}) {
				t.Errorf("metrics,ports lists %v", got)
			}
		}},
		{"read-only", Selection{ReadOnly: true}, func(t *testing.T, got []string) {
			for _, st := range all {
				if slices.Contains(got, st.Tool.Name) != readOnly(st.Tool.Name) {
					t.Errorf("read-only lists %s: %v, its readOnlyHint is %v", st.Tool.Name, slices.Contains(got, st.Tool.Name), readOnly(st.Tool.Name))
				}
			}
			if len(got) == 0 || slices.Contains(got, "execute_command") {
				t.Errorf("read-only lists %v", got)
			}
		}},
		{"no destructive tools", Selection{DisableDestructive: true}, func(t *testing.T, got []string) {
			for _, st := range all {
				if slices.Contains(got, st.Tool.Name) == destructive(st.Tool.Name) {
					t.Errorf("disable-destructive: %s listed %v, destructiveHint %v", st.Tool.Name, slices.Contains(got, st.Tool.Name), destructive(st.Tool.Name))
				}
			}
			if slices.Contains(got, "delete_sandbox") {
				t.Error("delete_sandbox listed without destructive tools")
			}
		}},
		{"read-only within a set", Selection{Toolsets: []string{"sandbox"}, ReadOnly: true}, func(t *testing.T, got []string) {
			if !slices.Equal(got, []string{"list_sandbox_templates", "list_sandboxes", "get_sandbox_status"}) {
				t.Errorf("sandbox, read-only lists %v", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.sel.Validate(); err != nil {
				t.Fatal(err)
			}
			tt.check(t, names(Deps{Selection: tt.sel}))
		})
	}
}

func TestSelectionRefusesUnknownToolsets(t *testing.T) {
	err := Selection{Toolsets: []string{"exec", "shell"}}.Validate()
	if err == nil || !strings.Contains(err.Error(), `unknown toolset "shell": use one or more of exec, files, metrics, ports, process, sandbox, workspace, all`) {
		t.Fatalf("Validate: %v", err)
	}
}

// TestToolsetSizes keeps the README's "Choosing tools" table on what each set costs a model
// in tools/list bytes.
func TestToolsetSizes(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range ToolsetNames() {
		var size int
		for _, st := range All(Deps{Selection: Selection{Toolsets: []string{set}}}) {
			b, err := json.Marshal(st.Tool)
			if err != nil {
				t.Fatal(err)
			}
			size += len(b)
		}
		t.Logf("%-10s %6d bytes", set, size)
		row := regexp.MustCompile("(?m)^\\| `" + set + "`[^\n]*\\| ([0-9]+) \\|$").FindSubmatch(readme)
		if row == nil || string(row[1]) != strconv.Itoa(size) {
			t.Errorf("README's Choosing tools row for %s: %q, want %d bytes", set, row, size)
		}
	}
}

// TestDescriptionsNameOnlyTheirToolset: a tool's description and argument descriptions name
// only tools of its own toolset, which --toolsets lists with it; what ties sets together is
// said in the instructions, which name only listed tools.
func TestDescriptionsNameOnlyTheirToolset(t *testing.T) {
	setOf := map[string]string{}
	for set, names := range toolsets {
		for _, name := range names {
			setOf[name] = set
		}
	}
	for _, st := range All(everyTool()) {
		var schema struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(st.Tool.RawInputSchema, &schema); err != nil {
			t.Fatal(err)
		}
		text := st.Tool.Description
		for _, p := range schema.Properties {
			text += " " + p.Description
		}
		for other, set := range setOf {
			if set != setOf[st.Tool.Name] && regexp.MustCompile(`\b`+other+`\b`).MatchString(text) {
				t.Errorf("%s (toolset %s) names %s (toolset %s), which --toolsets %s does not list",
					st.Tool.Name, setOf[st.Tool.Name], other, set, setOf[st.Tool.Name])
			}
		}
	}
}

// TestInstructionsNameOnlyListedTools: whatever the operator's filter, the instructions never
// tell the model of a tool it cannot call, and still name every one it can.
func TestInstructionsNameOnlyListedTools(t *testing.T) {
	every := All(Deps{})
	sels := []Selection{{ReadOnly: true}, {DisableDestructive: true}, {ReadOnly: true, Toolsets: []string{"workspace"}}}
	for _, set := range ToolsetNames() {
		sels = append(sels, Selection{Toolsets: []string{set}})
	}
	for _, sel := range sels {
		d := Deps{Selection: sel}
		listed := All(d)
		text := d.instructions(listed)
		for _, st := range every {
			name := st.Tool.Name
			named := regexp.MustCompile(`\b` + name + `\b`).MatchString(text)
			isListed := slices.ContainsFunc(listed, func(l server.ServerTool) bool { return l.Tool.Name == name })
			switch {
			case named && !isListed:
				t.Errorf("%+v: the instructions name %s, which is not listed:\n%s", sel, name, text)
			case !named && isListed && !sel.ReadOnly && len(sel.Toolsets) == 0:
				t.Errorf("%+v: the instructions do not name %s", sel, name)
			}
		}
	}
}

func TestSelectionIncludes(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		want bool
	}{{nil, true}, {[]string{ToolsetAll}, true}, {[]string{"exec", ToolsetMetrics}, true}, {[]string{"exec"}, false}} {
		if got := (Selection{Toolsets: tc.sets}).Includes(ToolsetMetrics); got != tc.want {
			t.Errorf("%v includes metrics: %v, want %v", tc.sets, got, tc.want)
		}
	}
}
