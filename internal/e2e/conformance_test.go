//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// conformanceCheck is one entry of a scenario's checks.json.
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO
	ErrorMessage string `json:"errorMessage"`
}

// TestConformance runs every server scenario of the official MCP conformance suite
// (@modelcontextprotocol/conformance, the version hack/deps.sh pins) against the server over
// HTTP. A scenario that tests the protocol must pass; one that needs the suite's own fixture
// tools, prompts or resources (an "everything" server's) cannot, and must not pass either: if
// the suite's verdict on any scenario changes, or it gains one, the lists below are out of date.
func TestConformance(t *testing.T) {
	t.Parallel()
	applicable := []string{
		"server-initialize",
		"logging-set-level",
		"ping",
		"completion-complete", // it completes a prompt the server lacks: an empty list is a valid answer
		"tools-list",
		"resources-list",
		"prompts-list",
		"server-sse-multiple-streams",
		"dns-rebinding-protection",
	}
	fixture := func(kind, name string) string {
		return "calls the suite's fixture " + kind + " " + name + ", which a sandbox server does not have"
	}
	notApplicable := map[string]string{
		"tools-call-simple-text":        fixture("tool", "test_simple_text"),
		"tools-call-image":              fixture("tool", "test_image_content"),
		"tools-call-audio":              fixture("tool", "test_audio_content"),
		"tools-call-embedded-resource":  fixture("tool", "test_embedded_resource"),
		"tools-call-mixed-content":      fixture("tool", "test_multiple_content_types"),
		"tools-call-with-logging":       fixture("tool", "test_tool_with_logging"),
		"tools-call-error":              fixture("tool", "test_error_handling"),
		"tools-call-with-progress":      fixture("tool", "test_tool_with_progress"),
		"tools-call-sampling":           fixture("tool", "test_sampling"),
		"tools-call-elicitation":        fixture("tool", "test_elicitation"),
		"elicitation-sep1034-defaults":  fixture("tool", "test_elicitation_sep1034_defaults"),
		"elicitation-sep1330-enums":     fixture("tool", "test_elicitation_sep1330_enums"),
		"json-schema-2020-12":           fixture("tool", "json_schema_2020_12_tool"),
		"resources-read-text":           fixture("resource", "test://static-text"),
		"resources-read-binary":         fixture("resource", "test://static-binary"),
		"resources-templates-read":      fixture("resource template", "test://template/{id}/data"),
		"resources-subscribe":           "subscribes to the fixture test://watched-resource; the server offers no resource subscriptions (resources.subscribe is false)",
		"resources-unsubscribe":         "subscribes to the fixture test://watched-resource first; the server offers no resource subscriptions",
		"prompts-get-simple":            fixture("prompt", "test_simple_prompt"),
		"prompts-get-with-args":         fixture("prompt", "test_prompt_with_arguments"),
		"prompts-get-embedded-resource": fixture("prompt", "test_prompt_with_embedded_resource"),
		"prompts-get-with-image":        fixture("prompt", "test_prompt_with_image"),
		"server-sse-polling":            "calls the fixture tool test_reconnection; without it the answer is JSON and the suite records information only, no verdict",
	}

	bin := conformanceBin(t)
	listed := conformanceScenarios(t, bin)
	want := slices.Sorted(slices.Values(slices.Concat(applicable, slices.Collect(maps.Keys(notApplicable)))))
	if !slices.Equal(listed, want) {
		t.Fatalf("the suite's server scenarios are %v; this test knows %v: classify the new ones", listed, want)
	}

	base := httpServer(t, connections()[4].env)
	results := runConformance(t, bin, base+"/mcp")
	for _, name := range applicable {
		checks, ok := results[name]
		if !ok {
			t.Errorf("%s: no results", name)
			continue
		}
		passed := 0
		for _, c := range checks {
			switch c.Status {
			case "SUCCESS":
				passed++
			case "INFO":
			default:
				t.Errorf("%s: check %s %s: %s", name, c.ID, c.Status, c.ErrorMessage)
			}
		}
		if passed == 0 {
			t.Errorf("%s: no check passed: %+v", name, checks)
		}
	}
	for name, reason := range notApplicable {
		if _, ok := results[name]; !ok {
			t.Errorf("%s: no results", name)
		}
		for _, c := range results[name] {
			if c.Status == "SUCCESS" {
				t.Errorf("%s (not applicable: %s): check %s now passes; move it to the applicable ones", name, reason, c.ID)
			}
		}
	}
}

// conformanceBin is the suite's CLI that hack/deps.sh installs under the stack's cache, next
// to the Node 22 it needs.
func conformanceBin(t *testing.T) string {
	t.Helper()
	deps, err := os.ReadFile(filepath.Join(stack.RepoRoot, "hack", "deps.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^CONFORMANCE_VERSION=(\S+)$`).FindSubmatch(deps)
	if m == nil {
		t.Fatal("hack/deps.sh pins no CONFORMANCE_VERSION")
	}
	bin := filepath.Join(filepath.Dir(stack.Env["RUN_DIR"]), "npm", "conformance-"+string(m[1]), "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(bin, "conformance")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the MCP conformance suite is not installed (hack/deps.sh installs it): %v", err)
		}
		t.Skipf("the MCP conformance suite is not installed; run hack/deps.sh (%v)", err)
	}
	return bin
}

// conformance runs the suite's CLI and returns its stdout and exit code.
func conformance(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "conformance"), args...)
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return stdout.String(), ee.ExitCode()
	case err != nil:
		t.Fatalf("conformance %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String(), 0
}

// conformanceScenarios are the server scenarios the suite lists, sorted.
func conformanceScenarios(t *testing.T, bin string) []string {
	t.Helper()
	out, code := conformance(t, bin, "list", "--server")
	if code != 0 {
		t.Fatalf("conformance list exited %d: %s", code, out)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s+- (\S+) \[`).FindAllStringSubmatch(out, -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		t.Fatalf("no scenarios in: %s", out)
	}
	slices.Sort(names)
	return names
}

// runConformance runs every server scenario, pending ones included, and returns each one's
// checks. The CLI exits 1 because the fixture scenarios fail; the checks say which.
func runConformance(t *testing.T, bin, url string) map[string][]conformanceCheck {
	t.Helper()
	dir := t.TempDir()
	out, code := conformance(t, bin, "server", "--url", url, "--suite", "all", "-o", dir)
	summary := out
	if i := strings.LastIndex(out, "=== SUMMARY"); i >= 0 {
		summary = out[i:]
	}
	t.Logf("conformance server exited %d:\n%s", code, summary)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Each scenario writes server-<scenario>-<timestamp>/checks.json.
	name := regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)
	results := map[string][]conformanceCheck{}
	for _, e := range entries {
		m := name.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			t.Fatal(err)
		}
		var checks []conformanceCheck
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		results[m[1]] = checks
	}
	return results
}
