// Package helmtest runs the pinned Helm (hack/helm.sh) for the chart's tests: its unit tests
// (charts) and its install on the local stack (internal/e2e).
package helmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	once   sync.Once
	binary string
	failed error
)

// Helm is the path of the pinned Helm, installed by hack/helm.sh (under repoRoot) if it is not
// yet: a build from the Go module proxy, minutes the first time. Without it the test is
// skipped, except where CI is set (hack/test.sh, after hack/deps.sh installed it).
func Helm(t *testing.T, repoRoot string) string {
	t.Helper()
	once.Do(func() {
		var stderr bytes.Buffer
		cmd := exec.Command(filepath.Join(repoRoot, "hack", "helm.sh"), "--path")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			failed = fmt.Errorf("hack/helm.sh --path: %w\n%s", err, stderr.String())
			return
		}
		binary = strings.TrimSpace(string(out))
	})
	if failed != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("helm cannot be obtained: %v", failed)
		}
		t.Skipf("helm cannot be obtained (hack/helm.sh builds it from the Go module proxy): %v", failed)
	}
	return binary
}

// Run runs helm with its home folders in a temporary folder, so that nothing of the user's Helm
// configuration (repositories, plugins) takes part, against kubeconfig ("": none). It returns
// stdout, or an error with stderr.
func Run(t *testing.T, helm, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	if kubeconfig == "" {
		kubeconfig = filepath.Join(home, "no-kubeconfig")
	}
	cmd := exec.Command(helm, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config",
		"HELM_DATA_HOME="+home+"/data", "KUBECONFIG="+kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// ValuesFile writes values (JSON is YAML) to a file for helm's -f. Not under t.TempDir(),
// whose name holds the test's: helm splits -f at commas.
func ValuesFile(t *testing.T, values map[string]any) string {
	t.Helper()
	b, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp("", "helm-values-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(f.Name()) })
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}
