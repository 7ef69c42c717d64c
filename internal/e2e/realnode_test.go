//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What only a real node shows: each sandbox is a runc container with the template's limits,
// a command beyond the memory limit is OOM-killed and said so, and a pod deleted under a
// running command gives the model a clear error.

// runtimes are one connection per in-sandbox runtime: sandboxd and the python runtime.
func runtimes() []connection {
	var out []connection
	for _, c := range connections() {
		if c.name == "sandboxd-pod-ip" || c.name == "in-cluster-pod-ip" {
			out = append(out, c)
		}
	}
	return out
}

// sandboxPod is the pod of a claim, as the API server has it.
func sandboxPod(t *testing.T, ns, claim string) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := stack.WaitClaimReady(ctx, ns, claim)
	if err != nil {
		t.Fatal(err)
	}
	return c.Pod
}

// cgroupLimits prints the memory limit in bytes and the CPU quota and period in µs of the
// command's own cgroup, on cgroup v1 and v2 alike, and the seccomp mode.
const cgroupLimits = `if [ -f /sys/fs/cgroup/cpu.max ]; then
  m=$(cat /sys/fs/cgroup/memory.max); set -- $(cat /sys/fs/cgroup/cpu.max); q=$1; p=$2
else
  m=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes); q=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us); p=$(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)
fi
echo "$m $q $p $(awk '/^Seccomp:/{print $2}' /proc/self/status) $(id -u)"`

func TestSandboxIsAContainerWithTheTemplatesLimits(t *testing.T) {
	for _, c := range runtimes() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ns := stack.Namespace(t, c.pool)
			cs := stdioSession(t, c.env, "")
			created := call[createResult](t, cs, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
			pod := sandboxPod(t, ns.Name, created.SandboxClaimName)
			limits := pod.Spec.Containers[0].Resources.Limits
			wantMem, wantCPU := limits.Memory().Value(), limits.Cpu().MilliValue()
			if wantMem == 0 || wantCPU == 0 {
				t.Fatalf("the template's first container has no limits: %v", limits)
			}
			ex := call[execResult](t, cs, "execute_command", map[string]any{
				"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name, "command": cgroupLimits})
			f := strings.Fields(ex.Stdout)
			if ex.ExitCode != 0 || len(f) != 5 {
				t.Fatalf("reading the cgroup: %+v", ex)
			}
			mem, _ := strconv.ParseInt(f[0], 10, 64)
			quota, _ := strconv.ParseInt(f[1], 10, 64)
			period, _ := strconv.ParseInt(f[2], 10, 64)
			if mem != wantMem {
				t.Errorf("memory limit inside the sandbox %d bytes, want the pod spec's %d", mem, wantMem)
			}
			if period <= 0 || quota*1000/period != wantCPU {
				t.Errorf("CPU quota inside the sandbox %d/%d µs, want the pod spec's %dm", quota, period, wantCPU)
			}
			// 2: a seccomp filter (the kubelet's seccompDefault gives every container RuntimeDefault).
			if f[3] != "2" {
				t.Errorf("seccomp mode %s, want 2 (filter)", f[3])
			}
			if f[4] == "0" {
				t.Error("commands run as root")
			}
		})
	}
}

func TestOOMKilledCommandIsReportedAsSuch(t *testing.T) {
	for _, c := range runtimes() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ns := stack.Namespace(t, c.pool)
			cs := stdioSession(t, c.env, "")
			created := call[createResult](t, cs, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
			claim := map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name}
			limit := sandboxPod(t, ns.Name, created.SandboxClaimName).Spec.Containers[0].Resources.Limits.Memory().Value()
			// tail keeps its last line in memory; a line of zeros half again the limit.
			cmd := fmt.Sprintf("head -c %d /dev/zero | tail -n 1 >/dev/null", limit*3/2)
			start := time.Now()
			ex := call[execResult](t, cs, "execute_command", map[string]any{
				"sandbox_claim_name": claim["sandbox_claim_name"], "namespace": ns.Name, "command": cmd, "timeout": 120})
			if ex.ExitCode != 137 || !strings.Contains(ex.Note, "out-of-memory") {
				t.Errorf("after %v: exit %d note %q, want 137 and a note on the memory limit", time.Since(start), ex.ExitCode, ex.Note)
			}
			alive := call[execResult](t, cs, "execute_command", map[string]any{
				"sandbox_claim_name": claim["sandbox_claim_name"], "namespace": ns.Name, "command": "echo alive"})
			if alive.Stdout != "alive\n" || alive.Note != "" {
				t.Errorf("the sandbox after the OOM kill: %+v", alive)
			}
		})
	}
}

func TestPodDeletedMidCommandIsAClearError(t *testing.T) {
	for _, c := range runtimes() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ns := stack.Namespace(t, c.pool)
			cs := stdioSession(t, c.env, "")
			created := call[createResult](t, cs, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
			pod := sandboxPod(t, ns.Name, created.SandboxClaimName)
			type outcome struct {
				text    string
				isError bool
				took    time.Duration
			}
			done := make(chan outcome, 1)
			marker := fmt.Sprintf("sleep 300.%d", time.Now().UnixNano()%1e9)
			go func() {
				start := time.Now()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_command", Arguments: map[string]any{
					"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name, "command": marker, "timeout": 600}})
				if err != nil {
					done <- outcome{text: "protocol error: " + err.Error(), took: time.Since(start)}
					return
				}
				done <- outcome{text: resultText(res), isError: res.IsError, took: time.Since(start)}
			}()
			// The pod goes while the command runs, not before it started.
			waitFor(t, time.Minute, func() bool { return len(processes(marker)) > 0 })
			if err := stack.Kube.CoreV1().Pods(ns.Name).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			select {
			case o := <-done:
				if !o.isError || !strings.Contains(o.text, created.SandboxClaimName) {
					t.Errorf("after %v: isError %v, %q; want an error naming the sandbox", o.took, o.isError, o.text)
				}
				t.Logf("after %v the model read: %s", o.took, o.text)
			case <-time.After(90 * time.Second):
				t.Fatal("execute_command still running 90 s after its pod was deleted")
			}
			call[map[string]any](t, cs, "delete_sandbox", map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name})
			claimGone(t, ns.Name, created.SandboxClaimName, 30*time.Second)
		})
	}
}

// TestOrphansAreReaped is issue 33 point 6: background jobs whose shell had exited became
// zombies (201 of them in an attack run), because the runtime, the container's first process,
// never waits for children it did not start. The templates share the pod's process namespace,
// so the pause container is PID 1 and reaps them.
func TestOrphansAreReaped(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t, bothPools...)
	for _, c := range runtimes() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cs := stdioSession(t, c.env, "")
			created := call[createResult](t, cs, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name})
			with := sandboxArgs(created.SandboxClaimName, ns.Name)
			orphans := call[execResult](t, cs, "execute_command", with(map[string]any{
				"command": "for i in $(seq 50); do (sleep 0.2 &); done; echo started"}))
			if orphans.ExitCode != 0 || orphans.Stdout != "started\n" {
				t.Fatalf("starting orphans: %+v", orphans)
			}
			// Zombies are state Z in /proc/<pid>/stat; the orphans' sleeps end within 0.2 s.
			count := `n=0; for f in /proc/[0-9]*/stat; do s=$(cat "$f" 2>/dev/null) || continue; s=${s##*) }; [ "${s%% *}" = Z ] && n=$((n+1)); done; echo $n`
			var zombies string
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
				zombies = call[execResult](t, cs, "execute_command", with(map[string]any{"command": count})).Stdout
				if zombies == "0\n" || time.Now().After(deadline) {
					break
				}
			}
			if zombies != "0\n" {
				t.Errorf("%s zombies left 30 s after 50 orphans exited, want 0", strings.TrimSpace(zombies))
			}
		})
	}
}
