package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestDoctorInvocation(t *testing.T) {
	noKube := filepath.Join(t.TempDir(), "none")
	env := []string{"HOME=" + t.TempDir(), "KUBECONFIG=" + noKube, "K8S_SANDBOX_CONNECTION__TYPE=direct", "K8S_SANDBOX_CONNECTION__API_URL=http://127.0.0.1:1"}
	cases := []struct {
		name   string
		args   []string
		env    []string
		code   int
		stdout string
		stderr string
	}{
		{"help", []string{"doctor", "--help"}, env, 0, "", "Usage: k8s-sandbox-mcp doctor"},
		{"bad output", []string{"doctor", "-o", "yaml"}, env, 2, "", "--output must be text or json"},
		{"stray argument", []string{"doctor", "now"}, env, 2, "", "doctor takes no arguments"},
		{"unknown toolset", []string{"doctor", "--toolsets", "nope"}, env, 2, "", `unknown toolset "nope"`},
		{"bad settings", []string{"doctor"}, []string{"K8S_SANDBOX_CONNECTION__TYPE=nope"}, 2, "", "K8S_SANDBOX_CONNECTION__TYPE"},
		{"no kubeconfig", []string{"doctor"}, env, 1, "FAIL api", ""},
		{"main help names doctor", []string{"--help"}, env, 0, "", "k8s-sandbox-mcp doctor [flags]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, tc.env, strings.NewReader(""), &stdout, &stderr)
			if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

// TestDoctorJSON: --output json is one object per check, a line each.
func TestDoctorJSON(t *testing.T) {
	env := []string{"HOME=" + t.TempDir(), "KUBECONFIG=" + filepath.Join(t.TempDir(), "none"),
		"K8S_SANDBOX_CONNECTION__TYPE=direct", "K8S_SANDBOX_CONNECTION__API_URL=http://127.0.0.1:1"}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"doctor", "--output", "json"}, env, strings.NewReader(""), &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, stderr.String())
	}
	var line struct{ Check, Status, Message, Fix string }
	if err := json.Unmarshal(stdout.Bytes(), &line); err != nil || line.Check != "api" || line.Status != "FAIL" || line.Fix == "" {
		t.Errorf("json %q: %+v %v", stdout.String(), line, err)
	}
}
