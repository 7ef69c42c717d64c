//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStatusSaysHowThePodEnded is issue 43.8: when a sandbox's main process dies, the kubelet
// restarts it and the Sandbox is "ready" again, with its processes gone and, without a volume,
// its files; get_sandbox_status says how it ended (the kubelet's reason and exit code), and how
// often. The test kills the main process from the node, as the kernel's OOM killer or a crash
// would (which reason and advice go with OOMKilled, Evicted and the rest: kube's and tools'
// unit tests).
func TestStatusSaysHowThePodEnded(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t).Name
	c := connections()[4]
	cs := stdioSession(t, c.env, "")
	created := call[createResult](t, cs, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns})
	pod := sandboxPod(t, ns, created.SandboxClaimName)
	cid := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	main, err := strconv.Atoi(containerMain(t, cid))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(main, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, func() bool {
		p, err := stack.Kube.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
		return err == nil && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].LastTerminationState.Terminated != nil
	})
	st := call[map[string]any](t, cs, "get_sandbox_status", sandboxArgs(created.SandboxClaimName, ns)(nil))
	if !strings.Contains(fmt.Sprint(st["last_termination"]), "(exit code 137)") || fmt.Sprint(st["restarts"]) != "1" {
		t.Errorf("get_sandbox_status after the main process was killed: %v", st)
	}
}

// containerProcesses are the host PIDs of a container's processes.
func containerProcesses(containerID string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if cg, err := os.ReadFile(filepath.Join(d, "cgroup")); err == nil && strings.Contains(string(cg), containerID) {
			out = append(out, filepath.Base(d))
		}
	}
	return out
}

// containerMain is the host PID of a container's main process: the oldest in its cgroup.
func containerMain(t *testing.T, containerID string) string {
	t.Helper()
	var pid string
	var oldest uint64
	for _, p := range containerProcesses(containerID) {
		stat, err := os.ReadFile(filepath.Join("/proc", p, "stat"))
		if err != nil {
			continue
		}
		// Field 22 is the start time; the command name (field 2) may hold spaces, so count after ")".
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		var start uint64
		fmt.Sscan(f[19], &start)
		if pid == "" || start < oldest {
			pid, oldest = p, start
		}
	}
	if pid == "" {
		t.Fatalf("no process of container %s on this node", containerID)
	}
	return pid
}
