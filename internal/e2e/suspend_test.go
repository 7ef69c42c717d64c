//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

type (
	suspendResult struct {
		Suspended  bool   `json:"suspended"`
		Status     string `json:"status"`
		VolumePath string `json:"volume_path"`
		Note       string `json:"note"`
	}
	resumeResult struct {
		SandboxName string   `json:"sandbox_name"`
		PodIPs      []string `json:"pod_ips"`
		VolumePath  string   `json:"volume_path"`
		Note        string   `json:"note"`
	}
	processListResult struct {
		Processes []processInfo `json:"processes"`
	}
)

// TestSuspendAndResume: suspend_sandbox deletes the pod of a sandbox with a persistent volume
// (nothing of it is left to request CPU) and get_sandbox_status says SandboxSuspended; a call
// on it is refused with the advice to resume; resume_sandbox brings a new pod on which the
// volume's file is still there, a new command runs and the processes from before are gone;
// with K8S_SANDBOX_AUTO_RESUME=true a call resumes a suspended sandbox by itself.
func TestSuspendAndResume(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t).Name
	c := connections()[2] // python runtime by pod IP: its template allows a volume, at /workspace
	owner := "suspend-" + randomHex(t)[:16]
	env := append(append([]string{}, c.env...), "K8S_SANDBOX_STDIO_OWNER="+owner)
	s := stdioSession(t, env, "")
	auto := stdioSession(t, append(append([]string{}, env...), "K8S_SANDBOX_AUTO_RESUME=true"), "")

	created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": localstack.PythonPool, "namespace": ns, "volume_size": "64Mi"})
	if created.VolumePath != "/workspace" {
		t.Fatalf("volume_path %q, want /workspace", created.VolumePath)
	}
	with := sandboxArgs(created.SandboxClaimName, ns)
	if ex := call[execResult](t, s, "execute_command", with(map[string]any{"command": "echo kept > /workspace/note.txt"})); ex.ExitCode != 0 {
		t.Fatalf("writing to the volume: %+v", ex)
	}
	before := call[processInfo](t, s, "start_process", with(map[string]any{"command": "sleep 600"}))

	sus := call[suspendResult](t, s, "suspend_sandbox", with(nil))
	if !sus.Suspended || sus.VolumePath != "/workspace" || !strings.Contains(sus.Note, "persistent volume") {
		t.Errorf("suspend_sandbox: %+v", sus)
	}
	waitNoSandboxPod(t, ns, created.SandboxName)
	st := call[statusResult](t, s, "get_sandbox_status", with(nil))
	if st.Status != "SandboxSuspended" || st.Ready || !strings.Contains(st.Message, "PodTerminated") {
		t.Errorf("status of the suspended sandbox: %+v", st)
	}
	if sb := sandboxOf(t, ns, created.SandboxClaimName); sb.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeSuspended {
		t.Errorf("operatingMode %q", sb.Spec.OperatingMode)
	}

	msg := callError(t, s, "execute_command", with(map[string]any{"command": "true"}))
	if want := `sandbox "` + created.SandboxClaimName + `" is suspended; call resume_sandbox first`; !strings.Contains(msg, want) {
		t.Errorf("a command on the suspended sandbox: %s\nwant it to contain %s", msg, want)
	}

	res := call[resumeResult](t, s, "resume_sandbox", with(map[string]any{"sandbox_ready_timeout": 300}))
	if len(res.PodIPs) == 0 || res.VolumePath != "/workspace" || res.SandboxName != created.SandboxName {
		t.Errorf("resume_sandbox: %+v", res)
	}
	ex := call[execResult](t, s, "execute_command", with(map[string]any{"command": "cat /workspace/note.txt && echo new-command"}))
	if ex.ExitCode != 0 || ex.Stdout != "kept\nnew-command\n" {
		t.Errorf("after resume: %+v", ex)
	}
	for _, p := range call[processListResult](t, s, "list_processes", with(nil)).Processes {
		if p.ProcessID == before.ProcessID && p.Running {
			t.Errorf("process %s from before the suspension still shown running", p.ProcessID)
		}
	}

	// Auto-resume: another server of the same owner resumes the suspended sandbox first.
	call[suspendResult](t, s, "suspend_sandbox", with(nil))
	waitNoSandboxPod(t, ns, created.SandboxName)
	ex = call[execResult](t, auto, "execute_command", with(map[string]any{"command": "cat /workspace/note.txt", "timeout": 60}))
	if ex.ExitCode != 0 || ex.Stdout != "kept\n" {
		t.Errorf("auto-resumed command: %+v", ex)
	}
	if st := call[statusResult](t, s, "get_sandbox_status", with(nil)); st.Status != "SandboxReady" {
		t.Errorf("status after auto-resume: %+v", st)
	}
	call[map[string]any](t, s, "delete_sandbox", with(nil))
}

// sandboxOf is the Sandbox bound to the claim.
func sandboxOf(t *testing.T, ns, claim string) *sandboxv1beta1.Sandbox {
	t.Helper()
	c, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns).Get(t.Context(), claim, metav1.GetOptions{})
	if err != nil || c.Status.SandboxStatus.Name == "" {
		t.Fatalf("claim %s: %v (sandbox %q)", claim, err, c.GetName())
	}
	sb, err := stack.Sandboxes.AgentsV1beta1().Sandboxes(ns).Get(t.Context(), c.Status.SandboxStatus.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

// waitNoSandboxPod waits until no pod in ns is controlled by the Sandbox, so none requests
// CPU or memory for it. suspend_sandbox waits for that itself, up to a minute; a pod slow to
// stop may outlast it by its grace period.
func waitNoSandboxPod(t *testing.T, ns, sandbox string) {
	t.Helper()
	sb, err := stack.Sandboxes.AgentsV1beta1().Sandboxes(ns).Get(t.Context(), sandbox, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		pods, err := stack.Kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		left = nil
		for _, p := range pods.Items {
			if ref := metav1.GetControllerOf(&p); (ref != nil && ref.UID == sb.UID) || p.Name == sandbox {
				left = append(left, p.Name+" ("+string(p.Status.Phase)+")")
			}
		}
		if len(left) == 0 {
			return
		}
	}
	t.Fatalf("pods of the suspended sandbox %s are still there: %v", sandbox, left)
}
