//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCreateWithVolume: volume_size gives the sandbox a PersistentVolumeClaim of that size
// (the local stack's hostpath StorageClass) mounted where the template keeps its workspace; a
// file there survives the sandbox's pod being killed and replaced; and the volume goes with
// the sandbox.
func TestCreateWithVolume(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	c := connections()[4] // sandboxd by pod IP: its working directory is the workspace
	s := stdioSession(t, c.env, "")
	created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name, "volume_size": "64Mi"})
	if created.VolumePath != "/workspace" {
		t.Fatalf("volume_path %q, want /workspace", created.VolumePath)
	}
	with := sandboxArgs(created.SandboxClaimName, ns.Name)
	ex := call[execResult](t, s, "execute_command", with(map[string]any{"command": "echo kept > /workspace/note.txt && id -u && pwd"}))
	if ex.ExitCode != 0 {
		t.Fatalf("writing to the volume: %+v", ex)
	}
	pvcs, err := stack.Kube.CoreV1().PersistentVolumeClaims(ns.Name).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(pvcs.Items) != 1 {
		t.Fatalf("claims of volumes: %v %v", pvcs, err)
	}
	pvc := pvcs.Items[0]
	if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "64Mi" || pvc.Status.Phase != corev1.ClaimBound {
		t.Errorf("PVC %s: %s, %s", pvc.Name, got.String(), pvc.Status.Phase)
	}

	// Kill the pod: the controller makes a new one on the same volume.
	if err := stack.Kube.CoreV1().Pods(ns.Name).Delete(t.Context(), created.SandboxName, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	var got string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		res := callRaw(t, s, "execute_command", with(map[string]any{"command": "cat /workspace/note.txt"}))
		if !res.IsError {
			if got = decode[execResult](t, res).Stdout; strings.TrimSpace(got) == "kept" {
				break
			}
		}
	}
	if strings.TrimSpace(got) != "kept" {
		t.Fatalf("after the pod was replaced the file holds %q", got)
	}

	if msg := callError(t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name, "volume_size": "1Ti"}); !strings.Contains(msg, "more than this server allows") {
		t.Errorf("volume over the cap: %s", msg)
	}
	call[map[string]any](t, s, "delete_sandbox", with(nil))
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		left, err := stack.Kube.CoreV1().PersistentVolumeClaims(ns.Name).List(t.Context(), metav1.ListOptions{})
		if err == nil && len(left.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the volume outlived its sandbox: %v %v", left, err)
		}
	}
}
