//go:build e2e

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSessionsAreIsolated: two HTTP sessions on one server cannot see or touch each other's
// sandboxes; a separate stdio process cannot either.
func TestSessionsAreIsolated(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	env := connections()[4].env // sandboxd pod IP
	base := httpServer(t, env)
	alice := httpSession(t, base, "2025-11-25")
	bob := httpSession(t, base, "2025-11-25")
	mallory := stdioSession(t, env, "")

	created := call[createResult](t, alice, "create_sandbox", map[string]any{"warmpool": "sandboxd-pool", "namespace": ns.Name})
	claim := map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name}
	for name, other := range map[string]*mcp.ClientSession{"bob": bob, "mallory": mallory} {
		for tool, extra := range map[string]map[string]any{
			"execute_command": {"command": "id"}, "upload_file": {"path": "x", "content": "y"},
			"download_file": {"path": "x"}, "list_files": {"path": "."}, "file_exists": {"path": "x"},
			"get_sandbox_status": {}, "delete_sandbox": {}, "suspend_sandbox": {}, "resume_sandbox": {},
		} {
			args := map[string]any{}
			for k, v := range claim {
				args[k] = v
			}
			for k, v := range extra {
				args[k] = v
			}
			if msg := callError(t, other, tool, args); !strings.Contains(msg, "not found") {
				t.Errorf("%s %s on alice's sandbox: %s", name, tool, msg)
			}
		}
		if got := readSandboxes(t, other, ns.Name); len(got) != 0 {
			t.Errorf("%s sees %v", name, got)
		}
	}
	if got := readSandboxes(t, alice, ns.Name); len(got) != 1 || got[0] != created.SandboxClaimName {
		t.Errorf("alice's sandboxes resource: %v", got)
	}
	// Still alive for alice after everyone else's attempts.
	if st := call[statusResult](t, alice, "get_sandbox_status", claim); !st.Ready {
		t.Errorf("alice's sandbox after the attempts: %+v", st)
	}
	call[struct{}](t, alice, "delete_sandbox", claim)
}

func readSandboxes(t *testing.T, cs *mcp.ClientSession, ns string) []string {
	t.Helper()
	res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "sandboxes://" + ns})
	if err != nil {
		t.Fatalf("reading sandboxes://%s: %v", ns, err)
	}
	var names []string
	for _, c := range res.Contents {
		names = append(names, c.Text)
	}
	return names
}

// TestReadyzFollowsTheAPIServer stops the real kube-apiserver and starts it again: /readyz
// goes 503 with the generic reason and back to 200, while /healthz stays 200 throughout.
func TestReadyzFollowsTheAPIServer(t *testing.T) {
	// Not parallel: it takes the API server away from every other test. hack/test.sh runs it
	// alone, after the go test it runs beside the package's.
	base := httpServer(t, connections()[4].env)
	probe := func(path string) (int, map[string]any, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m, string(b)
	}
	if code, m, _ := probe("/readyz"); code != 200 || m["ready"] != true {
		t.Fatalf("readyz with the API up: %d %v", code, m)
	}
	if err := stack.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = stack.StartAPIServer()
		}
	})
	waitFor(t, 30*time.Second, func() bool {
		code, m, body := probe("/readyz")
		if code == 503 && m["reason"] != "kubernetes API unavailable" {
			t.Fatalf("readyz reason %q (%s)", m["reason"], body)
		}
		if code == 503 && (strings.Contains(body, "refused") || strings.Contains(body, "127.0.0.1")) {
			t.Fatalf("readyz leaks the error: %s", body)
		}
		return code == 503 && m["ready"] == false
	})
	if code, _, body := probe("/healthz"); code != 200 || body != "ok" {
		t.Errorf("healthz while the API is down: %d %q", code, body)
	}
	if err := stack.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	waitFor(t, 60*time.Second, func() bool {
		code, m, _ := probe("/readyz")
		return code == 200 && m["ready"] == true
	})
}

func waitFor(t *testing.T, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
