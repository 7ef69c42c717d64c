package tools

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

func serverTestOptions() []server.ServerOption {
	return []server.ServerOption{server.WithOutputSchemaValidation()}
}

// TestBadInput: every malformed call is an isError result naming the problem, with no
// structuredContent and without reaching the sandbox.
func TestBadInput(t *testing.T) {
	owned := map[string]any{"sandbox_claim_name": "mine", "namespace": "ns1"}
	with := func(extra map[string]any) map[string]any {
		m := map[string]any{}
		for k, v := range owned {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"exec timeout 0", "execute_command", with(map[string]any{"command": "true", "timeout": 0}), "timeout"},
		{"exec timeout 601", "execute_command", with(map[string]any{"command": "true", "timeout": 601}), "timeout"},
		{"exec budget low", "execute_command", with(map[string]any{"command": "true", "max_output_chars": 127}), "max_output_chars"},
		{"exec budget high", "execute_command", with(map[string]any{"command": "true", "max_output_chars": 300001}), "max_output_chars"},
		{"exec blank command", "execute_command", with(map[string]any{"command": "   "}), "command"},
		{"exec timeout string", "execute_command", with(map[string]any{"command": "true", "timeout": "ten"}), "timeout"},
		{"exec unknown claim", "execute_command", map[string]any{"sandbox_claim_name": "nope", "namespace": "ns1", "command": "true"}, `"nope" is not found in namespace "ns1"`},
		{"exec other owner", "execute_command", map[string]any{"sandbox_claim_name": "theirs", "namespace": "ns1", "command": "true"}, `"theirs" is not found`},
		{"bad namespace", "file_exists", with(map[string]any{"namespace": "Bad_NS", "path": "a"}), "not a valid Kubernetes namespace"},
		{"list max 0", "list_files", with(map[string]any{"path": ".", "max_entries": 0}), "max_entries"},
		{"list max 10001", "list_files", with(map[string]any{"path": ".", "max_entries": 10001}), "max_entries"},
		{"list timeout 601", "list_files", with(map[string]any{"path": ".", "timeout": 601}), "timeout"},
		{"exists timeout 0", "file_exists", with(map[string]any{"path": "a", "timeout": 0}), "timeout"},
		{"upload bad base64", "upload_file", with(map[string]any{"path": "a", "content": "not base64!", "binary": true}), "base64"},
		{"upload unpadded base64", "upload_file", with(map[string]any{"path": "a", "content": "YWJj ZA", "binary": true}), "base64"},
		{"download missing path", "download_file", with(map[string]any{"path": "missing.txt"}), "list_files"},
		{"create no pool", "create_sandbox", map[string]any{"warmpool": ""}, "warmpool"},
		{"create shutdown 0", "create_sandbox", map[string]any{"warmpool": "p", "shutdown_after_seconds": 0}, "shutdown_after_seconds"},
		{"create ready timeout 601", "create_sandbox", map[string]any{"warmpool": "p", "sandbox_ready_timeout": 601}, "sandbox_ready_timeout"},
		{"delete other owner", "delete_sandbox", map[string]any{"sandbox_claim_name": "theirs", "namespace": "ns1"}, "not found"},
		{"status other owner", "get_sandbox_status", map[string]any{"sandbox_claim_name": "theirs", "namespace": "ns1"}, "not found"},
		{"unknown argument", "file_exists", with(map[string]any{"path": "a", "pathh": "b"}), "pathh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.claims.add("ns1", "mine", testOwner)
			h.claims.add("ns1", "theirs", "owner-b")
			res := h.call(t, tt.tool, tt.args)
			if !res.IsError {
				t.Fatalf("want isError, got %s", text(res))
			}
			if res.StructuredContent != nil {
				t.Errorf("error result carries structuredContent: %v", res.StructuredContent)
			}
			if !strings.Contains(text(res), tt.want) {
				t.Errorf("error %q does not mention %q", text(res), tt.want)
			}
			if tt.tool != "download_file" && h.conn.calls != 0 {
				t.Errorf("sandbox was reached %d times on bad input", h.conn.calls)
			}
			if h.claims.claims["ns1/theirs"].Name == "" {
				t.Error("another owner's claim was deleted")
			}
		})
	}
}

func TestExecuteAppliesBudgetAndKeepsExitCode(t *testing.T) {
	h := newHarness(t)
	h.claims.add("default", "mine", testOwner)
	h.conn.stdout = strings.Repeat("o", 1000)
	h.conn.stderr = "err"
	h.conn.exitCode = 3
	res := h.call(t, "execute_command", map[string]any{"sandbox_claim_name": "mine", "command": "make", "max_output_chars": 200})
	if res.IsError {
		t.Fatal(text(res))
	}
	var got ExecResult
	decode(t, res.StructuredContent, &got)
	if got.ExitCode != 3 || !got.StdoutTruncated || got.StderrTruncated || got.StdoutTotalChars != 1000 || got.Stderr != "err" {
		t.Errorf("unexpected result %+v", got)
	}
	if n := len([]rune(got.Stdout)) + len([]rune(got.Stderr)); n != 200 {
		t.Errorf("budget used %d characters, want exactly 200", n)
	}
	if !strings.Contains(got.Stdout, "[... ") || h.conn.lastExec.Command != "make" || h.conn.lastExec.Argv != nil {
		t.Errorf("stdout %q, request %+v", got.Stdout, h.conn.lastExec)
	}
	if h.conn.lastTarget.SandboxName != "mine-sbx" || h.conn.lastTarget.Namespace != "default" {
		t.Errorf("routed by %+v, want the Sandbox name", h.conn.lastTarget)
	}
}

func TestExecuteArgvAndTimeout(t *testing.T) {
	h := newHarness(t)
	h.claims.add("default", "mine", testOwner)
	h.conn.stdout = "partial line\n"
	h.conn.execErr = conn.ErrTimeout
	res := h.call(t, "execute_command", map[string]any{"sandbox_claim_name": "mine", "command": "ls", "args": []any{"-l", "a b"}, "timeout": 5})
	if !res.IsError || !strings.Contains(text(res), "did not finish within 5 s") || !strings.Contains(text(res), "partial line") {
		t.Fatalf("timeout result: %s", text(res))
	}
	if got := h.conn.lastExec.Argv; len(got) != 3 || got[2] != "a b" || h.conn.lastExec.Timeout.Seconds() != 5 {
		t.Errorf("argv %q timeout %v", got, h.conn.lastExec.Timeout)
	}
}

func TestRunCodePassesTheProgramAsOneArgument(t *testing.T) {
	h := newHarness(t)
	h.claims.add("default", "mine", testOwner)
	code := "print('it''s')\nimport sys; sys.exit(2)"
	h.conn.exitCode = 2
	res := h.call(t, "run_code", map[string]any{"sandbox_claim_name": "mine", "language": "python", "code": code})
	var got ExecResult
	decode(t, res.StructuredContent, &got)
	if got.ExitCode != 2 {
		t.Errorf("exit code %d (%s)", got.ExitCode, text(res))
	}
	if argv := h.conn.lastExec.Argv; len(argv) != 3 || argv[0] != "python3" || argv[1] != "-c" || argv[2] != code || h.conn.lastExec.Command != "" {
		t.Errorf("argv %q", argv)
	}
	if res := h.call(t, "run_code", map[string]any{"sandbox_claim_name": "mine", "language": "cobol", "code": "x"}); !res.IsError {
		t.Error("an unknown language was accepted")
	}
}

func TestFilesRoundTrip(t *testing.T) {
	h := newHarness(t)
	h.claims.add("default", "mine", testOwner)
	bin := []byte{0, 0xff, 0xfe, 'x'}
	res := h.call(t, "upload_file", map[string]any{"sandbox_claim_name": "mine", "path": "d/b.bin", "content": base64.StdEncoding.EncodeToString(bin), "binary": true})
	var up UploadResult
	decode(t, res.StructuredContent, &up)
	if up.BytesWritten != 4 {
		t.Fatalf("bytes_written %d (%s)", up.BytesWritten, text(res))
	}
	res = h.call(t, "download_file", map[string]any{"sandbox_claim_name": "mine", "path": "d/b.bin"})
	if !res.IsError || !strings.Contains(text(res), "binary=true") {
		t.Errorf("non-UTF-8 download without binary: %s", text(res))
	}
	res = h.call(t, "download_file", map[string]any{"sandbox_claim_name": "mine", "path": "d/b.bin", "binary": true})
	var down DownloadResult
	decode(t, res.StructuredContent, &down)
	if down.Content != base64.StdEncoding.EncodeToString(bin) || down.BytesRead != 4 {
		t.Errorf("download %+v", down)
	}
	res = h.call(t, "file_exists", map[string]any{"sandbox_claim_name": "mine", "path": "gone"})
	var ex ExistsResult
	decode(t, res.StructuredContent, &ex)
	if res.IsError || ex.Exists {
		t.Errorf("missing path: %s", text(res))
	}
}

func TestListCapsEntries(t *testing.T) {
	h := newHarness(t)
	h.claims.add("default", "mine", testOwner)
	h.conn.listing = conn.Listing{Total: 5, Entries: []conn.Entry{{Name: "f0"}, {Name: "f1"}, {Name: "f2"}, {Name: "f3"}, {Name: "f4"}}}
	res := h.call(t, "list_files", map[string]any{"sandbox_claim_name": "mine", "path": ".", "max_entries": 2})
	var l ListResult
	decode(t, res.StructuredContent, &l)
	if len(l.Entries) != 2 || l.TotalEntries != 5 || !l.Truncated || l.Entries[1].Name != "f1" {
		t.Errorf("list %+v", l)
	}
}

func TestCreateShutdownArgument(t *testing.T) {
	tests := []struct {
		name string
		args map[string]any
		want string // "" for no lifecycle
	}{
		{"absent means 300", map[string]any{"warmpool": "p"}, "5m0s"},
		{"explicit", map[string]any{"warmpool": "p", "shutdown_after_seconds": 42}, "42s"},
		{"null disables", map[string]any{"warmpool": "p", "shutdown_after_seconds": nil}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			res := h.call(t, "create_sandbox", tt.args)
			if res.IsError {
				t.Fatal(text(res))
			}
			req := h.claims.created[0]
			got := ""
			if req.ShutdownAfter != nil {
				got = req.ShutdownAfter.String()
			}
			if got != tt.want || req.Owner != testOwner || req.Namespace != "default" || req.ReadyTimeout.Seconds() != 180 {
				t.Errorf("create request %+v (shutdown %q)", req, got)
			}
			var cr CreateResult
			decode(t, res.StructuredContent, &cr)
			if cr.SandboxClaimName == "" || cr.SandboxName == "" || (tt.want == "") != (cr.ShutdownTime == "") {
				t.Errorf("result %+v", cr)
			}
		})
	}
}

func decode(t *testing.T, v any, into any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}
