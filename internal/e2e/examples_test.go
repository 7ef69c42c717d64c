//go:build e2e

package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestExamplesRunUnderUpstreamNames: a sandbox claimed from the shipped example pools
// (deploy/examples, applied unchanged to a test namespace) runs in containers whose images
// carry the names a user's cluster is given: the python runtime agent-sandbox publishes on
// registry.k8s.io, and sandboxd under the kind.local/ name deploy/README.md says to build it
// as. The node has them side-loaded under those names (images.sh, as `kind load` does), and the
// kubelet pulls nothing: it reports each image already present.
func TestExamplesRunUnderUpstreamNames(t *testing.T) {
	version := stack.Env["AGENT_SANDBOX_VERSION"]
	want := map[string]string{
		"python-pool":   "registry.k8s.io/agent-sandbox/python-runtime-sandbox:" + version,
		"sandboxd-pool": "kind.local/sandboxd:" + version,
	}
	for _, c := range runtimes() {
		t.Run(c.pool, func(t *testing.T) {
			t.Parallel()
			ns := stack.Namespace(t, c.pool)
			cs := stdioSession(t, c.env, "")
			created := call[createResult](t, cs, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
			ex := call[execResult](t, cs, "execute_command", map[string]any{
				"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name, "command": "echo runs"})
			if ex.ExitCode != 0 || strings.TrimSpace(ex.Stdout) != "runs" {
				t.Fatalf("a command in the sandbox: %+v", ex)
			}
			pod := sandboxPod(t, ns.Name, created.SandboxClaimName)
			main := pod.Spec.Containers[0]
			if main.Image != want[c.pool] {
				t.Errorf("the runtime's container runs %q, want upstream's name %q", main.Image, want[c.pool])
			}
			for _, ctr := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
				if strings.HasPrefix(ctr.Image, "localhost/") && version != "v0.5.6" {
					t.Errorf("container %s runs %s, a name no registry holds", ctr.Name, ctr.Image)
				}
				if ctr.ImagePullPolicy != corev1.PullIfNotPresent {
					t.Errorf("container %s: imagePullPolicy %s: a side-loaded image would be pulled", ctr.Name, ctr.ImagePullPolicy)
				}
			}
			// The kubelet's events: "Pulled" saying the image was already present, never "Pulling".
			var pulled []string
			waitFor(t, 30*time.Second, func() bool {
				evs, err := stack.Kube.CoreV1().Events(ns.Name).List(t.Context(), metav1.ListOptions{
					FieldSelector: "involvedObject.kind=Pod,involvedObject.name=" + pod.Name})
				if err != nil {
					return false
				}
				pulled = pulled[:0]
				for _, e := range evs.Items {
					if e.Reason == "Pulling" || e.Reason == "Failed" || e.Reason == "BackOff" {
						t.Fatalf("the kubelet tried to pull: %s %s", e.Reason, e.Message)
					}
					if e.Reason == "Pulled" {
						pulled = append(pulled, e.Message)
					}
				}
				return len(pulled) >= len(pod.Spec.InitContainers)+len(pod.Spec.Containers)
			})
			found := false
			for _, m := range pulled {
				if !strings.Contains(m, "already present on machine") {
					t.Errorf("kubelet event Pulled: %q, want the image already present", m)
				}
				// The kubelet names the image as the pod spec does: the node has it under that name.
				found = found || strings.Contains(m, `"`+want[c.pool]+`"`)
			}
			if !found {
				t.Errorf("no kubelet event says %s was present on the node: %q", want[c.pool], pulled)
			}
			call[map[string]any](t, cs, "delete_sandbox", map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name})
		})
	}
}
