package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/logging"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// A stdio client that asks for log messages (logging/setLevel) hears the start-up API check's
// warning, whether the check finished before it asked (replayed) or after (sent then), with
// no credential in it; the server declares the logging capability.
func TestStdioClientHearsTheAPICheck(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(dummyKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startStdio(t, []string{"--kubeconfig", kc}, "K8S_SANDBOX_CONNECTION__TYPE=in-cluster")
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	caps := s.next()["result"].(map[string]any)["capabilities"].(map[string]any)
	if _, ok := caps["logging"]; !ok {
		t.Errorf("no logging capability: %v", caps)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.send(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"warning"}}`)
	for answered, heard := false, false; !answered || !heard; {
		m := s.next()
		switch {
		case m["id"] == float64(2):
			if _, ok := m["result"]; !ok {
				t.Fatalf("logging/setLevel: %v", m)
			}
			answered = true
		case m["method"] == "notifications/message":
			p := m["params"].(map[string]any)
			data := p["data"].(map[string]any)
			msg, _ := data["message"].(string)
			if p["level"] != "warning" || !strings.Contains(msg, "Kubernetes API check at start failed") {
				t.Fatalf("message %v", p)
			}
			if strings.Contains(msg, "secret-token-value") || data["user"] != nil {
				t.Errorf("message carries what it must not: %v", data)
			}
			heard = true
		default:
			t.Fatalf("unexpected %v", m)
		}
	}
	if code := s.close(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// Notices about a claim are warnings for its owner's clients, naming the claim and its time.
func TestNoticesAreForTheOwnersClients(t *testing.T) {
	at := time.Date(2026, 8, 23, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		n    kube.Notice
		want string
	}{
		{kube.Notice{Kind: kube.RenewalFailed, Namespace: "ns", Name: "c1", Owner: "o1", At: at, Err: errors.New("away")}, "renewing the sandbox's shutdown time"},
		{kube.Notice{Kind: kube.Expired, Namespace: "ns", Name: "c1", Owner: "o1", At: at}, "reached its shutdown time"},
	}
	for _, tc := range cases {
		var buf bytes.Buffer
		logNotices(zerolog.New(&buf))(tc.n)
		var m map[string]any
		if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
			t.Fatalf("%q: %v", buf.String(), err)
		}
		msg, _ := m["message"].(string)
		if m["level"] != "warn" || m[logging.ClientsField] != true || m[logging.OwnerField] != "o1" || m["claim"] != "c1" ||
			m["namespace"] != "ns" || m["shutdown_time"] != "2026-08-23T09:00:00Z" || !strings.Contains(msg, tc.want) {
			t.Errorf("kind %d: %v", tc.n.Kind, m)
		}
	}
}
