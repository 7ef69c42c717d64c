//go:build e2e

package e2e

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestFixedOwnerEndsReleaseOnlyUnheldSandboxes is issue 43.1: two stdio servers with one
// K8S_SANDBOX_STDIO_OWNER (two sessions of one configuration, or a restart that overlaps the
// old process). The end of one leaves the sandbox the other is using; the last one out
// releases it. A process that died (its Lease lapsed) leaves its sandbox to the next process
// of the owner to end.
func TestFixedOwnerEndsReleaseOnlyUnheldSandboxes(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t).Name
	c := connections()[4]
	t.Run("the last live process releases", func(t *testing.T) {
		t.Parallel()
		env := append([]string{"K8S_SANDBOX_STDIO_OWNER=holders-" + randomHex(t)[:12]}, c.env...)
		first := stdioSession(t, env, "")
		created := call[createResult](t, first, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns})
		with := sandboxArgs(created.SandboxClaimName, ns)
		call[execResult](t, first, "execute_command", with(map[string]any{"command": "echo kept > marker.txt"}))

		// The second process works in the same namespace, with a sandbox of its own.
		second := stdioSession(t, env, "")
		own := call[createResult](t, second, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns})
		want := []string{created.SandboxClaimName, own.SandboxClaimName}
		slices.Sort(want)
		got := call[listSandboxesResult](t, second, "list_sandboxes", map[string]any{"namespace": ns}).names()
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Fatalf("the second process lists %v, want %v", got, want)
		}
		if err := second.Close(); err != nil {
			t.Errorf("closing the second process: %v", err)
		}
		// Close returns once the process has exited, its release included.
		obj, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns).Get(t.Context(), created.SandboxClaimName, metav1.GetOptions{})
		if err != nil || obj.DeletionTimestamp != nil {
			t.Fatalf("the second process's end released the sandbox the first is using: %v", err)
		}
		if r := call[execResult](t, first, "execute_command", with(map[string]any{"command": "cat marker.txt"})); strings.TrimSpace(r.Stdout) != "kept" {
			t.Errorf("the first process reads %+v", r)
		}
		if err := first.Close(); err != nil {
			t.Errorf("closing the first process: %v", err)
		}
		claimGone(t, ns, created.SandboxClaimName, 30*time.Second)
		claimGone(t, ns, own.SandboxClaimName, 30*time.Second)
	})
	t.Run("a dead process's sandbox goes with the next end", func(t *testing.T) {
		t.Parallel()
		owner := "holders-" + randomHex(t)[:12]
		// A process releases where it may create: its default namespace and the allowed ones.
		env := append([]string{"K8S_SANDBOX_STDIO_OWNER=" + owner, "K8S_SANDBOX_ALLOWED_NAMESPACES=" + ns}, c.env...)
		dead, cmd := stdioServer(t, env, "")
		created := call[createResult](t, dead, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns})
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		// Its Lease lapses without waiting a minute: the test moves its last renewal back.
		leases := holderLeases(t, owner)
		if len(leases) != 1 {
			t.Fatalf("the killed process's holder Leases: %d, want 1", len(leases))
		}
		lapsed, _ := json.Marshal(map[string]any{"spec": map[string]any{"renewTime": metav1.NewMicroTime(time.Now().Add(-time.Hour))}})
		if _, err := stack.Kube.CoordinationV1().Leases(leases[0].Namespace).Patch(t.Context(), leases[0].Name, types.MergePatchType, lapsed, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}

		next := stdioSession(t, env, "")
		if got := call[listSandboxesResult](t, next, "list_sandboxes", map[string]any{"namespace": ns}).names(); !slices.Equal(got, []string{created.SandboxClaimName}) {
			t.Fatalf("the next process lists %v", got)
		}
		if err := next.Close(); err != nil {
			t.Errorf("closing the next process: %v", err)
		}
		claimGone(t, ns, created.SandboxClaimName, 30*time.Second)
		if left := holderLeases(t, owner); len(left) != 0 {
			t.Errorf("holder Leases left after every process ended: %d", len(left))
		}
	})
}

// holderLeases lists the holder Leases of a stdio owner, wherever the server put them.
func holderLeases(t *testing.T, owner string) []coordinationv1.Lease {
	t.Helper()
	list, err := stack.Kube.CoordinationV1().Leases("").List(t.Context(), metav1.ListOptions{LabelSelector: "mcp.k8s-agent-sandbox/holder=true"})
	if err != nil {
		t.Fatal(err)
	}
	var out []coordinationv1.Lease
	for _, l := range list.Items {
		if slices.Contains(slices.Collect(maps.Values(l.Labels)), owner) {
			out = append(out, l)
		}
	}
	return out
}
