//go:build e2e

package e2e

import (
	"path"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// customEnv enables sandboxes built to order for the local stack's images: those in the
// repository of the python runtime's image (registry.k8s.io/agent-sandbox/*, the names
// deploy/examples gives them), read from the stack, which may have been brought up before a
// rename of the images.
func customEnv() []string {
	return []string{"K8S_SANDBOX_CUSTOM_SANDBOXES__ALLOWED_IMAGES=" + path.Dir(stack.Env["PYTHON_IMAGE"]) + "/*",
		"K8S_SANDBOX_CUSTOM_SANDBOXES__MAX_CPU_MILLICORES=1000", "K8S_SANDBOX_CUSTOM_SANDBOXES__MAX_MEMORY_MIB=1024"}
}

// TestCreateToOrder: create_sandbox with image, cpus and memory runs in a pod with those limits,
// through a template and pool derived from the warm pool's; the same shape reuses them, an image
// outside the allowlist is refused, and a derived pool unused for the TTL is deleted.
func TestCreateToOrder(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	c := connections()[2] // python runtime by pod IP
	s := stdioSession(t, append(append([]string{"K8S_SANDBOX_CUSTOM_SANDBOXES__UNUSED_TTL_SECONDS=60"}, customEnv()...), c.env...), "")
	shape := map[string]any{"warmpool": c.pool, "namespace": ns.Name, "image": stack.Env["PYTHON_IMAGE"], "cpus": 0.5, "memory": 256}
	first := call[createResult](t, s, "create_sandbox", shape)
	if first.CustomPool == "" {
		t.Fatalf("no custom_pool in %+v", first)
	}
	m := call[metricsResult](t, s, "get_sandbox_metrics", map[string]any{"sandbox_claim_name": first.SandboxClaimName, "namespace": ns.Name})
	if r := m.Sandboxes[0]; r.CPULimitMillicores != 500 || r.MemoryLimitBytes != 256<<20 {
		t.Errorf("limits of a sandbox built to order: %+v", r)
	}
	ex := call[execResult](t, s, "execute_command", map[string]any{"sandbox_claim_name": first.SandboxClaimName, "namespace": ns.Name,
		"command": "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max"})
	if strings.TrimSpace(ex.Stdout) != "268435456" {
		t.Errorf("the sandbox's own memory limit: %q %q", ex.Stdout, ex.Stderr)
	}
	second := call[createResult](t, s, "create_sandbox", shape)
	if second.CustomPool != first.CustomPool {
		t.Errorf("the same shape got pool %q, then %q", first.CustomPool, second.CustomPool)
	}
	if msg := callError(t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name, "image": "docker.io/library/python:3"}); !strings.Contains(msg, "is not allowed on this server") {
		t.Errorf("an image outside the allowlist: %s", msg)
	}
	if msg := callError(t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name, "cpus": 2}); !strings.Contains(msg, "cpus") {
		t.Errorf("cpus over the cap: %s", msg)
	}
	for _, cr := range []createResult{first, second} {
		call[map[string]any](t, s, "delete_sandbox", map[string]any{"sandbox_claim_name": cr.SandboxClaimName, "namespace": ns.Name})
	}

	// Unused for longer than the TTL: the next sandbox built to order collects it.
	time.Sleep(62 * time.Second)
	other := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name, "cpus": 0.25})
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, perr := stack.Extensions.ExtensionsV1beta1().SandboxWarmPools(ns.Name).Get(t.Context(), first.CustomPool, metav1.GetOptions{})
		_, terr := stack.Extensions.ExtensionsV1beta1().SandboxTemplates(ns.Name).Get(t.Context(), first.CustomPool, metav1.GetOptions{})
		if apierrors.IsNotFound(perr) && apierrors.IsNotFound(terr) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("unused pool %s not collected: pool %v, template %v", first.CustomPool, perr, terr)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if _, err := stack.Extensions.ExtensionsV1beta1().SandboxWarmPools(ns.Name).Get(t.Context(), other.CustomPool, metav1.GetOptions{}); err != nil {
		t.Errorf("the pool in use was collected: %v", err)
	}
}
