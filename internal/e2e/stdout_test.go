//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestStdoutCarriesOnlyJSONRPC runs the built binary over stdio through a whole tool call
// (create, execute, delete) with debug logging on: every stdout line must be a JSON-RPC
// message; the logs go to stderr.
func TestStdoutCarriesOnlyJSONRPC(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	cmd := exec.Command(binary, "--log-level", "debug")
	cmd.Env = serverEnv(connections()[4].env...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(s string) {
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// await reads lines until the answer to id, checking every line on the way.
	await := func(id int) map[string]any {
		t.Helper()
		timeout := time.After(2 * time.Minute)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("stdout closed; stderr: %s", stderr.String())
				}
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil || m["jsonrpc"] != "2.0" {
					t.Fatalf("stdout line is not JSON-RPC: %q", line)
				}
				if m["id"] == float64(id) {
					return m
				}
			case <-timeout:
				t.Fatalf("no answer to request %d", id)
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	await(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	await(2)
	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_sandbox","arguments":{"warmpool":"sandboxd-pool","namespace":%q},"_meta":{"progressToken":"p"}}}`, ns.Name))
	res := await(3)["result"].(map[string]any)
	claim := res["structuredContent"].(map[string]any)["sandbox_claim_name"].(string)
	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"execute_command","arguments":{"sandbox_claim_name":%q,"namespace":%q,"command":"echo to-stdout; echo to-stderr >&2"}}}`, claim, ns.Name))
	if out := await(4)["result"].(map[string]any)["structuredContent"].(map[string]any); out["stdout"] != "to-stdout\n" {
		t.Errorf("execute_command: %v", out)
	}
	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"delete_sandbox","arguments":{"sandbox_claim_name":%q,"namespace":%q}}}`, claim, ns.Name))
	await(5)
	_ = stdin.Close()
	for line := range lines {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			t.Errorf("stdout line after EOF is not JSON: %q", line)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("server exit: %v", err)
	}
	logs := stderr.String()
	if !strings.Contains(logs, `"tool":"execute_command"`) || !strings.Contains(logs, `"level":"debug"`) && !strings.Contains(logs, `"level":"info"`) {
		t.Errorf("stderr lacks the tool-call log lines: %s", logs)
	}
	if strings.Contains(logs, "to-stdout") || strings.Contains(logs, "to-stderr") {
		t.Error("command output leaked into the logs")
	}
}
