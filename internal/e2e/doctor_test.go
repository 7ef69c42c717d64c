//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

// doctorLine is one line of `doctor --output json`.
type doctorLine struct{ Check, Status, Message, Fix string }

// runDoctor runs the built binary's doctor with env (a clean environment) and args, and
// returns its lines by check and its exit code.
func runDoctor(t *testing.T, env []string, args ...string) (map[string]doctorLine, []string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binary, append([]string{"doctor", "--output", "json"}, args...)...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("doctor: %v", err)
	}
	t.Logf("doctor %v: exit %d in %s\n%s%s", args, code, time.Since(start).Round(time.Millisecond), stdout.String(), stderr.String())
	lines := map[string]doctorLine{}
	var order []string
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var l doctorLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("doctor printed a line that is not a JSON object: %q", sc.Text())
		}
		lines[l.Check] = l
		order = append(order, l.Check)
	}
	if len(order) == 0 {
		t.Fatalf("doctor printed nothing (exit %d): %s", code, stderr.String())
	}
	return lines, order, code
}

func wantLine(t *testing.T, lines map[string]doctorLine, check, status, says string) {
	t.Helper()
	l, ok := lines[check]
	if !ok || l.Status != status || !strings.Contains(l.Message, says) {
		t.Errorf("%s: got %+v, want %s containing %q", check, l, status, says)
	}
}

// TestDoctor: on the healthy stack every check passes, the probe included (a claim from the
// test's pool, `true` through the sandboxd connection, the claim deleted) and NetworkPolicy
// (the probe's sandbox cannot reach the API server); a verb removed from
// the identity's role and a pool scaled to zero each give their FAIL line and exit 1.
func TestDoctor(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t).Name
	sandboxd := connections()[4]
	if sandboxd.name != "sandboxd-pod-ip" {
		t.Fatalf("connections()[4] is %s", sandboxd.name)
	}
	settings := append(slices.Clone(sandboxd.env), "K8S_SANDBOX_ALLOWED_NAMESPACES="+ns, "K8S_SANDBOX_PIN__WARMPOOL="+localstack.SandboxdPool)

	t.Run("healthy", func(t *testing.T) {
		lines, order, code := runDoctor(t, serverEnv(settings...), "--probe", "--namespace", ns)
		want := []string{"api", "crds", "controller", "pools", "rbac", "metrics", "networkpolicy", "probe"}
		if !slices.Equal(order, want) {
			t.Errorf("checks %v, want %v", order, want)
		}
		for _, check := range want {
			wantLine(t, lines, check, "OK", "")
		}
		// kube-router runs as a host process here, which no API object shows: the probe's
		// sandbox finds the shipped templates' policy enforced.
		wantLine(t, lines, "networkpolicy", "OK", "enforced: the probe's sandbox (pool "+ns+"/"+localstack.SandboxdPool+") could not connect to the API server's Service")
		wantLine(t, lines, "pools", "OK", ns+"/"+localstack.SandboxdPool)
		wantLine(t, lines, "probe", "OK", "ran through the sandboxd-in-cluster connection; claim deleted")
		if code != 0 {
			t.Errorf("exit %d on a healthy stack", code)
		}
		// The probe's claim is gone (deleted in the background: its finalizers may take a moment).
		waitFor(t, 30*time.Second, func() bool {
			list, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns).List(t.Context(), metav1.ListOptions{})
			return err == nil && len(list.Items) == 0
		})
	})

	t.Run("verb removed", func(t *testing.T) {
		id := reducedIdentity(t, loadDeploy(t), ns, "doctor-no-delete", perm{claimsGroup, "sandboxclaims", "delete"})
		env := append(serverEnv(settings...), "KUBECONFIG="+id.kubeconfig) // the last one counts
		lines, _, code := runDoctor(t, env)
		// Without --probe and without a DaemonSet to see, the API cannot tell.
		wantLine(t, lines, "networkpolicy", "WARN", "cannot tell from the API")
		wantLine(t, lines, "rbac", "FAIL", "delete sandboxclaims in "+ns+" (breaks delete_sandbox")
		if code != 1 {
			t.Errorf("exit %d with a FAIL line, want 1", code)
		}
	})

	t.Run("pool scaled to zero", func(t *testing.T) {
		if _, err := stack.Extensions.ExtensionsV1beta1().SandboxWarmPools(ns).Patch(t.Context(), localstack.SandboxdPool,
			types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		lines, _, code := runDoctor(t, serverEnv(settings...), "--namespace", ns)
		wantLine(t, lines, "pools", "FAIL", "pool "+ns+"/"+localstack.SandboxdPool+" is scaled to zero")
		wantLine(t, lines, "rbac", "OK", "")
		if code != 1 {
			t.Errorf("exit %d with a FAIL line, want 1", code)
		}
	})
}
