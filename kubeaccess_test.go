package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunMainHelper is the server binary when the tests below start it as a child process
// (only then: it does nothing in a normal run).
func TestRunMainHelper(t *testing.T) {
	if os.Getenv("GO_TEST_RUN_MAIN") != "1" {
		t.Skip("runs only as the child process of another test")
	}
	os.Exit(run(context.Background(), flag.Args(), os.Environ(), os.Stdin, os.Stdout, os.Stderr))
}

// TestNoKubeconfigStopsAtStart starts the server the way Claude Desktop does, with a minimal
// environment: no --kubeconfig, no KUBECONFIG, no ~/.kube/config, not in a pod. It must stop
// at once with one line naming what to set, not serve tools that all fail.
func TestNoKubeconfigStopsAtStart(t *testing.T) {
	home := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunMainHelper$", "--")
	cmd.Dir = home // no .env
	cmd.Env = []string{"GO_TEST_RUN_MAIN=1", "HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"K8S_SANDBOX_CONNECTION__TYPE=in-cluster"}
	cmd.Stdin = strings.NewReader("")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit: %v, want code 2; stderr: %s", err, stderr.String())
	}
	want := "k8s-sandbox-mcp: no Kubernetes configuration: pass --kubeconfig PATH or set KUBECONFIG (there is no kubeconfig at " +
		filepath.Join(home, ".kube", "config") + ", and this is not a pod)\n"
	if stderr.String() != want {
		t.Errorf("stderr\n got %q\nwant %q", stderr.String(), want)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout must stay empty, got %q", stdout.String())
	}
}

// TestKubeconfigLeadingNowhere: a kubeconfig from which client-go would fall back to
// http://localhost:8080 is refused at start, with what to change.
func TestKubeconfigLeadingNowhere(t *testing.T) {
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		t.Skip("in a pod client-go uses the in-cluster configuration instead")
	}
	const cluster = `clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
`
	for _, tc := range []struct {
		name, kubeconfig string
		args             []string
		want             string // KC stands for the kubeconfig's path
	}{
		{"empty file", "", nil,
			"k8s-sandbox-mcp: the kubeconfig KC defines no context: add one, or pass --kubeconfig PATH\n"},
		{"no current context", cluster + "contexts: [{name: blue, context: {cluster: c, user: u}}, {name: green, context: {cluster: c, user: u}}]\n", nil,
			"k8s-sandbox-mcp: the kubeconfig KC selects no context: set current-context in it or pass --context NAME (one of blue, green)\n"},
		{"unknown current context", cluster + "contexts: [{name: blue, context: {cluster: c, user: u}}]\ncurrent-context: prod\n", nil,
			"k8s-sandbox-mcp: the Kubernetes configuration is unusable: invalid configuration: context was not found for specified context: prod (check the kubeconfig and the --kubeconfig and --context flags)\n"},
		{"unknown --context", cluster + "contexts: [{name: blue, context: {cluster: c, user: u}}]\ncurrent-context: blue\n", []string{"--context", "prod"},
			"k8s-sandbox-mcp: the Kubernetes configuration is unusable: context \"prod\" does not exist (check the kubeconfig and the --kubeconfig and --context flags)\n"},
		{"context without cluster", cluster + "contexts: [{name: x, context: {cluster: gone, user: u}}]\ncurrent-context: x\n", nil,
			"k8s-sandbox-mcp: context \"x\" of the kubeconfig KC names cluster \"gone\", which has no server URL there: fix the kubeconfig or pass --context NAME\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := filepath.Join(t.TempDir(), "kubeconfig")
			if err := os.WriteFile(kc, []byte(tc.kubeconfig), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"--kubeconfig", kc}, tc.args...), []string{"K8S_SANDBOX_CONNECTION__TYPE=in-cluster"},
				strings.NewReader(""), &stdout, &stderr)
			if want := strings.ReplaceAll(tc.want, "KC", kc); code != 2 || stderr.String() != want {
				t.Errorf("code %d, stderr\n got %q\nwant %q", code, stderr.String(), want)
			}
		})
	}
}

// TestAPIServerDown: with a kubeconfig whose API server is down the server starts, warns
// once at start with the facts, and a tool call names the server, the cause and that
// retrying may help.
func TestAPIServerDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := "https://" + l.Addr().String()
	_ = l.Close() // nobody listens there any more: connection refused
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+server+`"}}]
users: [{name: alice, user: {token: secret-token-value}}]
contexts: [{name: x, context: {cluster: c, user: alice, namespace: team-a}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startStdio(t, []string{"--kubeconfig", kc}, "K8S_SANDBOX_CONNECTION__TYPE=in-cluster")
	s.initialize()
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_sandbox_status","arguments":{"sandbox_claim_name":"x"}}}`)
	r := s.next()
	res, _ := r["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if res["isError"] != true || len(content) == 0 {
		t.Fatalf("want an isError result, got %v", r)
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	want := "Could not get the sandbox status: the Kubernetes API server at " + server + " refused the connection. " +
		"Retry in a few seconds; if it persists, the API server at " + server + " is down — check the kubeconfig."
	if text != want {
		t.Errorf("tool error\n got %s\nwant %s", text, want)
	}
	stderr := s.stderr
	if code := s.close(); code != 0 {
		t.Errorf("exit code %d; stderr: %s", code, stderr.String())
	}

	var warnings []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["level"] == "warn" && strings.HasPrefix(m["message"].(string), "Kubernetes API check") {
			warnings = append(warnings, m)
		}
	}
	if len(warnings) != 1 {
		t.Fatalf("want exactly one API warning, at start, got %d: %s", len(warnings), stderr.String())
	}
	w := warnings[0]
	wantMsg := "Kubernetes API check at start failed: the Kubernetes API server at " + server + " refused the connection. " +
		"Retry in a few seconds; if it persists, the API server at " + server + " is down — check the kubeconfig."
	if w["message"] != wantMsg || w["api_server"] != server || w["user"] != "alice" || w["cause"] != "connection refused" || w["retry_may_help"] != true {
		t.Errorf("warning: %v", w)
	}
	if strings.Contains(stderr.String(), "secret-token-value") {
		t.Error("a credential leaked into the logs")
	}
}

// TestAPIServerRejectsCredentials: a 401 at start names the kubeconfig user and says that
// retrying will not help.
func TestAPIServerRejectsCredentials(t *testing.T) {
	// A loopback API server that rejects every request as a real one does without valid credentials.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
	}))
	t.Cleanup(srv.Close)
	server := srv.URL
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+server+`"}}]
users: [{name: bob, user: {token: expired}}]
contexts: [{name: x, context: {cluster: c, user: bob}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--kubeconfig", kc}, []string{"K8S_SANDBOX_CONNECTION__TYPE=in-cluster"},
		strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	want := `"message":"Kubernetes API check at start failed: the Kubernetes API server at ` + server +
		` rejected the credentials of user \"bob\" (401 Unauthorized). Retrying will not help: the person running this server must fix the credentials of user \"bob\" in the kubeconfig (expired or wrong token or certificate?)."`
	if strings.Count(stderr.String(), "Kubernetes API check") != 1 || !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks the one warning %s:\n%s", want, stderr.String())
	}
}
