package tools

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
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
	const (
		timeoutRange    = "timeout must be between 1 and 600 seconds, got %d. Pass a value in that range, or leave timeout out for the default (60)."
		budgetRange     = "max_output_chars must be between 128 and 300000, got %d. Pass a value in that range, or leave max_output_chars out for the default (30000)."
		entriesRange    = "max_entries must be between 1 and 10000, got %d. Pass a value in that range, or leave max_entries out for the default (1000)."
		nsRule          = "Kubernetes namespace of the sandbox: lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters. Defaults to the server's current namespace."
		nsOrAllRule     = "Kubernetes namespace of the sandbox: lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters, or \"*\" for every namespace this server may use. Defaults to the server's current namespace."
		poolRule        = "A Kubernetes object name: lowercase letters, digits, '-' and '.', at most 253 characters."
		claimRule       = "Claim name returned by create_sandbox (sandbox_claim_name)."
		pathRule        = "A path of 1 to 4096 characters, without control characters."
		notFound        = `Sandbox claim %q is not found in namespace "ns1". It may have been deleted or expired (shutdown_after_seconds); list_sandboxes lists your sandboxes; create_sandbox makes a new one.`
		execTimeoutRule = "Seconds to wait."
		requestRule     = "Repeating it returns the same sandbox while it lives (to retry a lost create)."
		shutdownMax     = "shutdown_after_seconds must be between 1 and 31536000 seconds, got %s. Pass a value in that range, or leave shutdown_after_seconds out for the default (300)."
	)
	f := fmt.Sprintf
	tests := []struct {
		name, tool string
		args       map[string]any
		want       string // the whole message
	}{
		{"exec timeout 0", "execute_command", with(map[string]any{"command": "true", "timeout": 0}), f(timeoutRange, 0)},
		{"exec timeout 601", "execute_command", with(map[string]any{"command": "true", "timeout": 601}), f(timeoutRange, 601)},
		{"exec timeout huge", "execute_command", with(map[string]any{"command": "true", "timeout": 1e20}), strings.Replace(timeoutRange, "%d", "100000000000000000000", 1)},
		{"exec timeout fraction", "execute_command", with(map[string]any{"command": "true", "timeout": 1.5}),
			"timeout must be an integer, got a number. " + execTimeoutRule},
		{"exec budget low", "execute_command", with(map[string]any{"command": "true", "max_output_chars": 127}), f(budgetRange, 127)},
		{"exec budget high", "execute_command", with(map[string]any{"command": "true", "max_output_chars": 300001}), f(budgetRange, 300001)},
		{"exec blank command", "execute_command", with(map[string]any{"command": "   "}), "command is required and must not be blank"},
		{"exec empty command", "execute_command", with(map[string]any{"command": ""}),
			`command must not be empty. Shell command; with args, the program.`},
		{"exec no command", "execute_command", owned,
			`command is required. Shell command; with args, the program.`},
		{"exec timeout string", "execute_command", with(map[string]any{"command": "true", "timeout": "ten"}),
			"timeout must be an integer, got a string. " + execTimeoutRule},
		{"exec args not strings", "execute_command", with(map[string]any{"command": "ls", "args": []any{"-l", 3}}),
			"args.1 must be a string, got a number. "},
		{"exec unknown claim", "execute_command", map[string]any{"sandbox_claim_name": "nope", "namespace": "ns1", "command": "true"}, f(notFound, "nope")},
		{"exec other owner", "execute_command", map[string]any{"sandbox_claim_name": "theirs", "namespace": "ns1", "command": "true"}, f(notFound, "theirs")},
		{"claim with CRLF", "execute_command", map[string]any{"sandbox_claim_name": "mine\r\nX: y", "namespace": "ns1", "command": "true"},
			`sandbox_claim_name "mine\r\nX: y" is not valid. ` + claimRule},
		{"claim upper case", "delete_sandbox", map[string]any{"sandbox_claim_name": "Mine", "namespace": "ns1"}, `sandbox_claim_name "Mine" is not valid. ` + claimRule},
		{"no claim", "get_sandbox_status", map[string]any{"namespace": "ns1"}, "sandbox_claim_name is required. " + claimRule},
		{"bad namespace", "file_exists", with(map[string]any{"namespace": "Bad_NS", "path": "a"}), `namespace "Bad_NS" is not valid. ` + nsRule},
		{"upper-case namespace", "execute_command", with(map[string]any{"namespace": "Team-A", "command": "true"}), `namespace "Team-A" is not valid. ` + nsRule},
		{"dotted namespace", "create_sandbox", map[string]any{"warmpool": "p", "namespace": "a.b"}, `namespace "a.b" is not valid. ` + nsRule},
		{"create env name", "create_sandbox", map[string]any{"warmpool": "p", "env": map[string]any{"A-B": "v"}},
			`env name "A-B" is not valid: use letters, digits and '_', not starting with a digit`},
		{"catalog namespace", "list_sandbox_templates", map[string]any{"namespace": "*x"}, `namespace "*x" is not valid. ` + nsOrAllRule},
		{"catalog namespace upper", "list_sandbox_templates", map[string]any{"namespace": "A"}, `namespace "A" is not valid. ` + nsOrAllRule},
		{"long namespace", "create_sandbox", map[string]any{"warmpool": "p", "namespace": strings.Repeat("a", 64)}, `namespace "` + strings.Repeat("a", 64) + `" is not valid. ` + nsRule},
		{"list max 0", "list_files", with(map[string]any{"path": ".", "max_entries": 0}), f(entriesRange, 0)},
		{"list max 10001", "list_files", with(map[string]any{"path": ".", "max_entries": 10001}), f(entriesRange, 10001)},
		{"list timeout 601", "list_files", with(map[string]any{"path": ".", "timeout": 601}), f(timeoutRange, 601)},
		{"exists timeout 0", "file_exists", with(map[string]any{"path": "a", "timeout": 0}), f(timeoutRange, 0)},
		{"path with NUL", "download_file", with(map[string]any{"path": "a\x00/etc"}), `path "a\x00/etc" is not valid. ` + pathRule},
		{"path with newline", "upload_file", with(map[string]any{"path": "a\nb", "content": "x"}), `path "a\nb" is not valid. ` + pathRule},
		{"empty path", "list_files", with(map[string]any{"path": ""}), "path must not be empty. " + pathRule},
		{"upload bad base64", "upload_file", with(map[string]any{"path": "a", "content": "not base64!", "binary": true}),
			"content is not valid base64 (standard alphabet with padding): illegal base64 data at input byte 3. Encode the bytes with base64, or pass text with binary=false."},
		{"upload unpadded base64", "upload_file", with(map[string]any{"path": "a", "content": "YWJj ZA", "binary": true}),
			"content is not valid base64 (standard alphabet with padding): illegal base64 data at input byte 4. Encode the bytes with base64, or pass text with binary=false."},
		{"download missing path", "download_file", with(map[string]any{"path": "missing.txt"}),
			`Could not download the file: "missing.txt": path not found. Check the path with list_files or file_exists.`},
		{"create no pool", "create_sandbox", map[string]any{"warmpool": ""}, "warmpool must not be empty. " + poolRule},
		{"create pool with CRLF", "create_sandbox", map[string]any{"warmpool": "demo-pool\r\nX: y"}, `warmpool "demo-pool\r\nX: y" is not valid. ` + poolRule},
		{"create shutdown 0", "create_sandbox", map[string]any{"warmpool": "p", "shutdown_after_seconds": 0}, f(shutdownMax, "0")},
		{"create shutdown wraps", "create_sandbox", map[string]any{"warmpool": "p", "shutdown_after_seconds": 18446744075}, f(shutdownMax, "18446744075")},
		{"create shutdown huge", "create_sandbox", map[string]any{"warmpool": "p", "shutdown_after_seconds": 10000000000}, f(shutdownMax, "10000000000")},
		{"create ready timeout 601", "create_sandbox", map[string]any{"warmpool": "p", "sandbox_ready_timeout": 601},
			"sandbox_ready_timeout must be between 1 and 600 seconds, got 601. Pass a value in that range, or leave sandbox_ready_timeout out for the default (180)."},
		{"create request_id empty", "create_sandbox", map[string]any{"warmpool": "p", "request_id": ""}, "request_id must not be empty. " + requestRule},
		{"create request_id too long", "create_sandbox", map[string]any{"warmpool": "p", "request_id": strings.Repeat("r", 65)},
			"request_id is 65 characters long; at most 64 are allowed. " + requestRule},
		{"create request_id with a space", "create_sandbox", map[string]any{"warmpool": "p", "request_id": "job 1"}, `request_id "job 1" is not valid. Use up to 64 letters, digits, '.', '_', ':' or '-'. ` + requestRule},
		{"create request_id not a string", "create_sandbox", map[string]any{"warmpool": "p", "request_id": 7}, "request_id must be a string, got a number. " + requestRule},
		{"list_sandboxes namespace", "list_sandboxes", map[string]any{"namespace": "Bad_NS"}, `namespace "Bad_NS" is not valid. ` + nsOrAllRule},
		{"list_sandboxes all without allowlist", "list_sandboxes", map[string]any{"namespace": "*"},
			`namespace "*" needs the operator's list of namespaces (K8S_SANDBOX_ALLOWED_NAMESPACES), and this server has none: pass a namespace`},
		{"create label value not a string", "create_sandbox", map[string]any{"warmpool": "p", "labels": map[string]any{"a": 1}}, "labels.a must be a string, got a number. "},
		{"run_code language", "run_code", with(map[string]any{"code": "1", "language": "ruby"}), `language must be one of bash, nodejs, python, sh; got "ruby".`},
		{"extend without seconds", "extend_sandbox", with(nil), "shutdown_after_seconds is required. Seconds before automatic deletion."},
		{"extend zero", "extend_sandbox", with(map[string]any{"shutdown_after_seconds": 0}),
			"shutdown_after_seconds must be between 1 and 31536000 seconds, got 0."},
		{"extend other owner", "extend_sandbox", map[string]any{"sandbox_claim_name": "theirs", "namespace": "ns1", "shutdown_after_seconds": 60}, f(notFound, "theirs")},
		{"delete other owner", "delete_sandbox", map[string]any{"sandbox_claim_name": "theirs", "namespace": "ns1"}, f(notFound, "theirs")},
		{"suspend other owner", "suspend_sandbox", map[string]any{"sandbox_claim_name": "theirs", "namespace": "ns1"}, f(notFound, "theirs")},
		{"suspend no claim", "suspend_sandbox", map[string]any{"namespace": "ns1"}, "sandbox_claim_name is required. " + claimRule},
		{"resume other owner", "resume_sandbox", map[string]any{"sandbox_claim_name": "theirs", "namespace": "ns1"}, f(notFound, "theirs")},
		{"resume ready timeout 0", "resume_sandbox", with(map[string]any{"sandbox_ready_timeout": 0}),
			"sandbox_ready_timeout must be between 1 and 600 seconds, got 0. Pass a value in that range, or leave sandbox_ready_timeout out for the default (180)."},
		{"resume ready timeout 601", "resume_sandbox", with(map[string]any{"sandbox_ready_timeout": 601}),
			"sandbox_ready_timeout must be between 1 and 600 seconds, got 601. Pass a value in that range, or leave sandbox_ready_timeout out for the default (180)."},
		{"status other owner", "get_sandbox_status", map[string]any{"sandbox_claim_name": "theirs", "namespace": "ns1"}, f(notFound, "theirs")},
		{"process id with a slash", "read_process_output", with(map[string]any{"process_id": "../x"}),
			`process_id "../x" is not valid. The process_id start_process returned.`},
		{"process wait too long", "read_process_output", with(map[string]any{"process_id": "p1", "wait_seconds": 241}),
			"wait_seconds must be between 0 and 240 seconds, got 241. Pass a value in that range, or leave wait_seconds out for the default (0)."},
		{"process negative since", "read_process_output", with(map[string]any{"process_id": "p1", "since": map[string]any{"stdout": -1}}),
			"since.stdout must be between 0 and 1125899906842624, got -1. Pass a value in that range, or leave since.stdout out for the default (0)."},
		{"process bad signal", "signal_process", with(map[string]any{"process_id": "p1", "signal": "STOP"}), `signal must be one of INT, TERM, KILL, HUP; got "STOP".`},
		{"stdin text and base64", "write_process_stdin", with(map[string]any{"process_id": "p1", "text": "a", "base64": "YQ=="}), "pass text or base64, not both"},
		{"stdin bad base64", "write_process_stdin", with(map[string]any{"process_id": "p1", "base64": "%%%"}),
			"base64 is not valid standard base64 (illegal base64 data at input byte 0); encode the bytes again, or pass text"},
		{"stdin nothing", "write_process_stdin", with(map[string]any{"process_id": "p1"}),
			"nothing to do: pass text or base64 to write, and/or close: true to close stdin"},
		{"start env name", "start_process", with(map[string]any{"command": "x", "env": map[string]any{"1BAD": "v"}}),
			`env name "1BAD" is not valid: use letters, digits and '_', not starting with a digit`},
		{"start blank command", "start_process", with(map[string]any{"command": " "}), "command is required and must not be blank"},
		{"read offset 0", "read_file", with(map[string]any{"path": "a", "offset": 0}),
			"offset must be between 1 and 2147483647, got 0. Pass a value in that range, or leave offset out for the default (1)."},
		{"read limit too high", "read_file", with(map[string]any{"path": "a", "limit": 10001}),
			"limit must be between 1 and 10000, got 10001. Pass a value in that range, or leave limit out for the default (1000)."},
		{"edit no change", "edit_file", with(map[string]any{"path": "a", "old_text": "x", "new_text": "x"}), "old_text and new_text are the same: there is nothing to change"},
		{"edit empty old", "edit_file", with(map[string]any{"path": "a", "old_text": "", "new_text": "x"}), "old_text must not be empty. The exact text to replace, copied from read_file without line numbers."},
		{"search nothing", "search_files", with(nil), "pass pattern (a regular expression to find in files), glob (file names to find), or both"},
		{"move without destination", "move_path", with(map[string]any{"path": "a"}), "destination is required. New path."},
		{"unknown argument", "file_exists", with(map[string]any{"path": "a", "pathh": "b"}), `unknown argument "pathh": file_exists takes sandbox_claim_name, path, namespace, timeout.`},
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
			if text(res) != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", text(res), tt.want)
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

// TestExecuteSavedOutputRefused: when conn's wrapper refuses the output directory (exit 125
// with its message), there are no files to name and the note says the command did not run;
// a command's own exit 125 keeps its files.
func TestExecuteSavedOutputRefused(t *testing.T) {
	for _, tc := range []struct {
		name, stderr string
		refused      bool
	}{
		{"state directory is a link", "cannot save the output in .k8s-sandbox-mcp/output/x: .k8s-sandbox-mcp is a symbolic link; the command did not run", true},
		{"the command's own 125", "podman: no such image", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.claims.add("default", "mine", testOwner)
			h.conn.stderr, h.conn.exitCode = tc.stderr, 125
			res := h.call(t, "execute_command", map[string]any{"sandbox_claim_name": "mine", "command": "make", "save_full_output": true})
			if res.IsError {
				t.Fatal(text(res))
			}
			var got ExecResult
			decode(t, res.StructuredContent, &got)
			if refused := got.StdoutFile == "" && strings.Contains(got.Note, "did not run"); refused != tc.refused || got.ExitCode != 125 {
				t.Errorf("result %+v: refused %v, want %v", got, refused, tc.refused)
			}
		})
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
			h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.AllowNoShutdown = true })
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

// TestNullShutdownOnlyWhenAllowed: by default a sandbox always has a TTL, and the schema the
// model reads says so.
func TestNullShutdownOnlyWhenAllowed(t *testing.T) {
	h := newHarness(t)
	res := h.call(t, "create_sandbox", map[string]any{"warmpool": "p", "shutdown_after_seconds": nil})
	want := "shutdown_after_seconds must be an integer, got null. Seconds before automatic deletion."
	if text(res) != want {
		t.Errorf("null TTL:\n got: %s\nwant: %s", text(res), want)
	}
	if len(h.claims.created) != 0 {
		t.Error("a claim was created")
	}
}
