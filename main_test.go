package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/budget"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/config"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/serve"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/tools"
)

const dummyKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: secret-token-value}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: team-a}}]
current-context: x
`

func TestHTTPAddress(t *testing.T) {
	for in, want := range map[string]string{"8000": "127.0.0.1:8000", "0.0.0.0:8000": "0.0.0.0:8000", "": ""} {
		f, err := parseFlags([]string{"--http", in}, io.Discard)
		if err != nil || f.httpAddr != want {
			t.Errorf("--http %q: %q, %v; want %q", in, f.httpAddr, err, want)
		}
	}
}

func TestRunSettingsErrors(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(dummyKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		env     []string
		code    int
		wantErr string
	}{
		{"no connection type", []string{"--kubeconfig", kc}, nil, 2, "K8S_SANDBOX_CONNECTION__TYPE is required"},
		{"bad port", []string{"--kubeconfig", kc}, []string{"K8S_SANDBOX_CONNECTION__TYPE=in-cluster", "K8S_SANDBOX_CONNECTION__SERVER_PORT=0"}, 2, "K8S_SANDBOX_CONNECTION__SERVER_PORT"},
		{"bad label key", []string{"--kubeconfig", kc}, []string{"K8S_SANDBOX_CONNECTION__TYPE=in-cluster", "K8S_SANDBOX_SESSION_ID_LABEL_KEY=not a key"}, 2, "K8S_SANDBOX_SESSION_ID_LABEL_KEY"},
		{"missing env file", []string{"--kubeconfig", kc, "--env-file", "/nonexistent/.env"}, nil, 2, "/nonexistent/.env"},
		{"unknown flag", []string{"--bogus"}, nil, 2, "bogus"},
		{"bad log level", []string{"--kubeconfig", kc, "--log-level", "loud"}, []string{"K8S_SANDBOX_CONNECTION__TYPE=in-cluster"}, 2, "log level"},
		{"exposed without auth", []string{"--kubeconfig", kc, "--http", "0.0.0.0:0"}, []string{"K8S_SANDBOX_CONNECTION__TYPE=in-cluster"}, 2, "--insecure-no-auth"},
		{"unknown toolset", []string{"--kubeconfig", kc, "--toolsets", "exec,shell"}, []string{"K8S_SANDBOX_CONNECTION__TYPE=in-cluster"}, 2, `unknown toolset "shell"`},
		{"unknown toolset in the environment", []string{"--kubeconfig", kc}, []string{"K8S_SANDBOX_CONNECTION__TYPE=in-cluster", "K8S_SANDBOX_TOOLSETS=all,nope"}, 2, `unknown toolset "nope"`},
		{"short token", []string{"--kubeconfig", kc, "--http", "127.0.0.1:0"}, []string{"K8S_SANDBOX_CONNECTION__TYPE=in-cluster", "K8S_SANDBOX_AUTH__TOKENS=alice:short"}, 2, "K8S_SANDBOX_AUTH__TOKENS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, tt.env, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("code %d, stderr %q; want %d and %q", code, stderr.String(), tt.code, tt.wantErr)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout must stay empty, got %q", stdout.String())
			}
		})
	}
}

// TestStdioStdoutIsProtocolOnly drives run() over pipes: every stdout line must be a JSON-RPC
// message, and logs (which do appear) go to stderr without secrets.
func TestStdioStdoutIsProtocolOnly(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(dummyKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startStdio(t, []string{"--kubeconfig", kc, "--log-level", "debug"}, "K8S_SANDBOX_CONNECTION__TYPE=in-cluster")
	s.initialize()
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	r := s.next()
	tools := r["result"].(map[string]any)["tools"].([]any)
	if len(tools) < 8 {
		t.Errorf("tools/list returned %d tools", len(tools))
	}
	// A call that reaches the (unreachable) API must come back as an isError result.
	s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_sandbox_status","arguments":{"sandbox_claim_name":"x"}}}`)
	r = s.next()
	if res := r["result"].(map[string]any); res["isError"] != true {
		t.Errorf("call against a dead API server: %v", r)
	}
	if code := s.close(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	for s.lines.Scan() {
		var m map[string]any
		if json.Unmarshal(s.lines.Bytes(), &m) != nil {
			t.Errorf("non-JSON on stdout: %q", s.lines.Text())
		}
	}
	stderr := s.stderr
	if !strings.Contains(stderr.String(), `"tool":"get_sandbox_status"`) || !strings.Contains(stderr.String(), `"namespace":"team-a"`) {
		t.Errorf("stderr lacks the tool-call log line with the kubeconfig namespace: %s", stderr.String())
	}
	if strings.Contains(stderr.String(), "secret-token-value") {
		t.Error("a credential leaked into the logs")
	}
}

// The worst-case memory at the default settings (budget.WorstCase of the in-flight bound the
// server derives from them, as newApp does) fits deploy/'s memory limit.
func TestDefaultWorstCaseFitsDeploy(t *testing.T) {
	cfg, err := config.Load(config.Source{Environ: []string{"K8S_SANDBOX_CONNECTION__TYPE=in-cluster"}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := serve.LoadHTTPSettings(cfg.Vars, tools.MaxResultBytes(cfg.Connection.MaxDownloadBytes))
	if err != nil {
		t.Fatal(err)
	}
	dep, err := os.ReadFile(filepath.Join("deploy", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s+memory: (\S+)$`).FindAllSubmatch(dep, -1)
	if len(m) == 0 {
		t.Fatal("deploy/deployment.yaml names no memory")
	}
	limit := resource.MustParse(string(m[len(m)-1][1])) // the limit follows the request
	if worst := budget.WorstCase(set.MaxBodyBytesInFlight); worst >= limit.Value() {
		t.Errorf("the defaults' worst case is %d MiB, not under deploy/'s limit of %s", worst>>20, limit.String())
	}
}
