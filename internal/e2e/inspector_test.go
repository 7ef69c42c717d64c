//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inspectorVersion is what hack/deps.sh installs (with Node 22) under the stack's cache.
const inspectorVersion = "2.12.0"

// inspector runs the npm MCP Inspector CLI, an independent client, and returns its stdout
// and exit code.
func inspector(t *testing.T, args ...string) (string, int) {
	t.Helper()
	bin := filepath.Join(filepath.Dir(stack.Env["RUN_DIR"]), "npm", "inspector-"+inspectorVersion, "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(bin, "mcp-inspector")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the MCP Inspector CLI is not installed (hack/deps.sh installs it): %v", err)
		}
		t.Skipf("the MCP Inspector CLI is not installed; run hack/deps.sh (%v)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "mcp-inspector"), append([]string{"--cli"}, args...)...)
	// Its node_modules/.bin holds Node 22 (the machine's may be older), first on PATH.
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("mcp-inspector: %v\n%s", err, stderr.String())
	}
	if code != 0 && code != 5 {
		t.Logf("mcp-inspector exited %d: %s", code, stderr.String())
	}
	return stdout.String(), code
}

// TestInspectorCLI: the Inspector lists the tools and runs create -> execute -> delete over
// stdio and HTTP, and exits 5 on an isError result.
func TestInspectorCLI(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	env := connections()[4].env
	// Each Inspector run is a new stdio process: a fixed owner, kept across runs, lets the
	// second run find the first run's sandbox.
	stdioEnv := append(append([]string{}, serverEnv(env...)...), "K8S_SANDBOX_STDIO_OWNER=inspector-e2e", "K8S_SANDBOX_KEEP_SANDBOXES_ON_SESSION_END=true")
	var stdioTarget []string
	for _, kv := range stdioEnv {
		stdioTarget = append(stdioTarget, "-e", kv)
	}
	stdioTarget = append(stdioTarget, binary)
	base := httpServer(t, env)
	// What the go-sdk client sees over each transport is what the Inspector must see (HTTP also
	// lists create_transfer_url, which needs an HTTP front).
	wants := map[string][]string{}
	for name, s := range map[string]*mcp.ClientSession{"stdio": stdioSession(t, env, ""), "http": httpSession(t, base, "")} {
		listed, err := s.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range listed.Tools {
			wants[name] = append(wants[name], tool.Name)
		}
	}
	targets := map[string][]string{
		"stdio": stdioTarget,
		// Sessionless runs share the anonymous owner, so one run's sandbox is the next one's.
		"http": {"--protocol-era", "modern", base + "/mcp"},
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			run := func(args ...string) (map[string]any, int) {
				out, code := inspector(t, append(append([]string{}, target...), append(args, "--format", "json", "-q")...)...)
				var m map[string]any
				if err := json.Unmarshal([]byte(out), &m); err != nil {
					t.Fatalf("inspector output is not JSON: %v\n%s", err, out)
				}
				if r, ok := m["result"].(map[string]any); ok {
					m = r
				}
				return m, code
			}
			tools, code := run("--method", "tools/list")
			list, _ := tools["tools"].([]any)
			var got []string
			for _, tool := range list {
				name, _ := tool.(map[string]any)["name"].(string)
				got = append(got, name)
			}
			if want := wants[name]; code != 0 || !slices.Equal(got, want) {
				t.Fatalf("tools/list: exit %d, tools %v, want %v", code, got, want)
			}
			args := func(kv ...string) []string {
				var out []string
				for _, a := range kv {
					out = append(out, "--tool-arg", a)
				}
				return out
			}
			created, code := run(append([]string{"--method", "tools/call", "--tool-name", "create_sandbox"}, args("warmpool=sandboxd-pool", "namespace="+ns.Name)...)...)
			claim := structured(t, created, code)["sandbox_claim_name"].(string)
			executed, code := run(append([]string{"--method", "tools/call", "--tool-name", "execute_command"},
				args("sandbox_claim_name="+claim, "namespace="+ns.Name, "command=echo inspector && exit 4")...)...)
			if ex := structured(t, executed, code); ex["stdout"] != "inspector\n" || ex["exit_code"] != float64(4) {
				t.Errorf("execute_command: %v", ex)
			}
			deleted, code := run(append([]string{"--method", "tools/call", "--tool-name", "delete_sandbox"}, args("sandbox_claim_name="+claim, "namespace="+ns.Name)...)...)
			structured(t, deleted, code)
			missing, code := run(append([]string{"--method", "tools/call", "--tool-name", "get_sandbox_status"}, args("sandbox_claim_name="+claim, "namespace="+ns.Name)...)...)
			if code != 5 || !strings.Contains(toJSON(missing), "not found") {
				t.Errorf("isError result: exit %d, %v", code, missing)
			}
		})
	}
}

func structured(t *testing.T, m map[string]any, code int) map[string]any {
	t.Helper()
	sc, ok := m["structuredContent"].(map[string]any)
	if code != 0 || !ok {
		t.Fatalf("exit %d, result %v", code, m)
	}
	return sc
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
