//go:build e2e

package localstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	processv1 "sigs.k8s.io/agent-sandbox/packages/sandboxd/spec/process/v1"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

func TestWarmPoolsHaveReadyPodsOnTheNode(t *testing.T) {
	s := requireStack(t)
	ctx := testContext(t)
	ns := s.Namespace(t, localstack.SandboxdPool, localstack.PythonPool)
	pods, err := s.Kube.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2*localstack.ReadyPerPool {
		t.Fatalf("got %d pods, want %d per pool", len(pods.Items), localstack.ReadyPerPool)
	}
	_, podNet, _ := net.ParseCIDR("10.244.0.0/24") // the CNI bridge's range (stack.sh)
	seen := map[string]string{}
	for _, p := range pods.Items {
		if ip := net.ParseIP(p.Status.PodIP); ip == nil || !podNet.Contains(ip) || p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s: phase %s ip %q, want Running in %s", p.Name, p.Status.Phase, p.Status.PodIP, podNet)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if !strings.HasPrefix(cs.ContainerID, "containerd://") || !cs.Ready {
				t.Errorf("pod %s container %s: id %q ready %v, want a ready containerd container", p.Name, cs.Name, cs.ContainerID, cs.Ready)
			}
		}
		if len(podProcesses(t, p.UID)) == 0 {
			t.Errorf("pod %s: no process in its cgroup", p.Name)
		}
		if other, dup := seen[p.Status.PodIP]; dup {
			t.Errorf("pods %s and %s share IP %s", p.Name, other, p.Status.PodIP)
		}
		seen[p.Status.PodIP] = p.Name
		if p.Spec.NodeName != s.Env["NODE_NAME"] {
			t.Errorf("pod %s on node %q", p.Name, p.Spec.NodeName)
		}
	}
	for _, pool := range []string{localstack.SandboxdPool, localstack.PythonPool} {
		wp, err := s.Extensions.ExtensionsV1beta1().SandboxWarmPools(ns.Name).Get(ctx, pool, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if wp.Status.ReadyReplicas != localstack.ReadyPerPool {
			t.Errorf("pool %s: readyReplicas %d, want %d", pool, wp.Status.ReadyReplicas, localstack.ReadyPerPool)
		}
	}
}

func TestSandboxdClaimRunsCommandsAndFilesAsNonRoot(t *testing.T) {
	s := requireStack(t)
	ctx := testContext(t)
	ns := s.Namespace(t)
	c, err := s.Claim(ctx, ns.Name, localstack.SandboxdPool)
	if err != nil {
		t.Fatal(err)
	}
	if c.PodIP() == "" || len(c.Sandbox.Status.PodIPs) == 0 || c.Sandbox.Status.PodIPs[0] != c.PodIP() {
		t.Fatalf("pod IP %q, sandbox podIPs %v", c.PodIP(), c.Sandbox.Status.PodIPs)
	}
	pc := processClient(t, c.PodIP())

	r := shExecute(ctx, t, pc, "id -u; echo oops >&2; exit 3")
	if uid := strings.TrimSpace(string(r.GetStdout())); uid == "0" || uid == "" {
		t.Errorf("commands run as uid %q, want an unprivileged uid", uid)
	}
	if string(r.GetStderr()) != "oops\n" || r.GetExitCode() != 3 {
		t.Errorf("Execute: stderr %q exit %d, want \"oops\\n\" 3", r.GetStderr(), r.GetExitCode())
	}

	stream, err := pc.Start(ctx, &processv1.StartRequest{Config: &processv1.ProcessConfig{
		Command: []string{"/bin/sh", "-c", "echo one; echo two >&2; exit 4"}}})
	if err != nil {
		t.Fatal(err)
	}
	var pid int32
	var stdout, stderr bytes.Buffer
	exit := int32(-100)
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Start stream: %v", err)
		}
		switch {
		case ev.GetInit() != nil:
			pid = ev.GetInit().GetProcessId()
		case ev.GetExit() != nil:
			exit = ev.GetExit().GetExitCode()
		default:
			stdout.Write(ev.GetStdout())
			stderr.Write(ev.GetStderr())
		}
	}
	if pid <= 0 || stdout.String() != "one\n" || stderr.String() != "two\n" || exit != 4 {
		t.Errorf("Start: pid %d stdout %q stderr %q exit %d", pid, stdout.String(), stderr.String(), exit)
	}

	url := "http://" + c.PodIP() + ":8080/v1/files/"
	content := []byte("hello from REST\n")
	if code, b := httpDo(ctx, t, http.MethodPut, url+"dir%2Fhello.txt", content); code != http.StatusNoContent {
		t.Fatalf("PUT: %d %s", code, b)
	}
	if code, b := httpDo(ctx, t, http.MethodGet, url+"dir%2Fhello.txt", nil); code != http.StatusOK || !bytes.Equal(b, content) {
		t.Errorf("GET file: %d %q", code, b)
	}
	if code, b := httpDo(ctx, t, http.MethodGet, url+"dir", nil); code != http.StatusOK || !strings.Contains(string(b), `"hello.txt"`) {
		t.Errorf("GET dir: %d %s", code, b)
	}
	if r := shExecute(ctx, t, pc, "cat dir/hello.txt"); !bytes.Equal(r.GetStdout(), content) {
		t.Errorf("gRPC sees %q, REST wrote %q", r.GetStdout(), content)
	}
	if r := shExecute(ctx, t, pc, "stat -c %u dir/hello.txt"); strings.TrimSpace(string(r.GetStdout())) != "1000" {
		t.Errorf("uploaded file owned by uid %q, want 1000 (the image's user)", r.GetStdout())
	}
}

func TestPythonRuntimeExecutesAndUploadsIntoItsOwnAppDir(t *testing.T) {
	s := requireStack(t)
	ctx := testContext(t)
	ns := s.Namespace(t, localstack.PythonPool)
	a, err := s.Claim(ctx, ns.Name, localstack.PythonPool)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Claim(ctx, ns.Name, localstack.PythonPool)
	if err != nil {
		t.Fatal(err)
	}
	baseA, baseB := "http://"+a.PodIP()+":8888", "http://"+b.PodIP()+":8888"
	dir := baseDir(a.Pod)
	r := pyExecute(ctx, t, baseA, nil, "id -u")
	if uid := strings.TrimSpace(r.Stdout); r.ExitCode != 0 || uid == "0" || uid == "" {
		t.Errorf("python /execute id -u: %+v, want an unprivileged uid", r)
	}
	if r := pyExecute(ctx, t, baseA, nil, "pwd"); strings.TrimSpace(r.Stdout) != dir {
		t.Errorf("python runtime cwd %q, want %s", r.Stdout, dir)
	}
	pyUpload(ctx, t, baseA, "note.txt", []byte("only in A"))
	if code, body := httpDo(ctx, t, http.MethodGet, baseA+"/download/note.txt", nil); code != 200 || string(body) != "only in A" {
		t.Errorf("download from A: %d %q", code, body)
	}
	if _, body := httpDo(ctx, t, http.MethodGet, baseB+"/exists/note.txt", nil); !strings.Contains(string(body), `"exists":false`) {
		t.Errorf("B sees A's upload: %s", body)
	}
	if r := pyExecute(ctx, t, baseA, nil, "cat "+dir+"/note.txt"); r.Stdout != "only in A" {
		t.Errorf("upload not in A's %s: %+v", dir, r)
	}
	if r := pyExecute(ctx, t, baseB, nil, "ls "+dir+"/note.txt"); r.ExitCode == 0 {
		t.Errorf("upload visible in B's %s: %+v", dir, r)
	}
}

// baseDir is where the python runtime keeps its files: SANDBOX_BASE_DIR from v1.0 (the
// example pools set it), /app before it.
func baseDir(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "SANDBOX_BASE_DIR" {
				return e.Value
			}
		}
	}
	return "/app"
}

func TestDeletingClaimStopsProcessesAndPoolRefills(t *testing.T) {
	s := requireStack(t)
	ctx := testContext(t)
	ns := s.Namespace(t)
	c, err := s.Claim(ctx, ns.Name, localstack.SandboxdPool)
	if err != nil {
		t.Fatal(err)
	}
	// A command that escapes into its own session must be stopped too.
	r := shExecute(ctx, t, processClient(t, c.PodIP()), "setsid sleep 600 >/dev/null 2>&1 & echo started")
	if string(r.GetStdout()) != "started\n" {
		t.Fatalf("background sleep: %q", r.GetStdout())
	}
	// setsid forks and then execs sleep, so the background child may still be named setsid
	// for a moment after the shell has answered.
	var before map[int]string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		before = podProcesses(t, c.Pod.UID)
		comms := slices.Collect(maps.Values(before))
		if slices.Contains(comms, "sleep") && slices.Contains(comms, "sandboxd") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod processes %v, want sandboxd and sleep among them", before)
		}
	}

	if err := s.Extensions.ExtensionsV1beta1().SandboxClaims(ns.Name).Delete(ctx, c.Claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone := func(what string, get func(context.Context) error) {
		if err := localstack.WaitGone(ctx, get); err != nil {
			t.Fatalf("%s still exists: %v", what, err)
		}
	}
	gone("sandbox", func(ctx context.Context) error {
		_, err := s.Sandboxes.AgentsV1beta1().Sandboxes(ns.Name).Get(ctx, c.Sandbox.Name, metav1.GetOptions{})
		return err
	})
	gone("pod", func(ctx context.Context) error {
		_, err := s.Kube.CoreV1().Pods(ns.Name).Get(ctx, c.Pod.Name, metav1.GetOptions{})
		return err
	})
	// The pod object goes once the kubelet has stopped its containers: nothing of it is left.
	for pid, comm := range before {
		if running(pid) {
			t.Errorf("%s (pid %d) still runs after the pod is gone", comm, pid)
		}
	}
	if left := podProcesses(t, c.Pod.UID); len(left) > 0 {
		t.Errorf("processes left in the pod's cgroup: %v", left)
	}
	if err := s.WaitPoolReady(ctx, ns.Name, localstack.SandboxdPool, localstack.ReadyPerPool); err != nil {
		t.Error(err)
	}
}

func TestKilledSandboxdIsRestartedAndPodReadyAgain(t *testing.T) {
	s := requireStack(t)
	ctx := testContext(t)
	ns := s.Namespace(t)
	c, err := s.Claim(ctx, ns.Name, localstack.SandboxdPool)
	if err != nil {
		t.Fatal(err)
	}
	victim := 0
	for pid, comm := range podProcesses(t, c.Pod.UID) {
		if comm == "sandboxd" {
			victim = pid
		}
	}
	if victim == 0 {
		t.Fatalf("no sandboxd in the pod's cgroup: %v", podProcesses(t, c.Pod.UID))
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := s.Kube.CoreV1().Pods(ns.Name).Get(ctx, c.Pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "sandboxd" {
				return cs.Ready && cs.RestartCount >= 1, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("sandboxd container not restarted and Ready: %v", err)
	}
	if r := shExecute(ctx, t, processClient(t, c.PodIP()), "echo back"); string(r.GetStdout()) != "back\n" {
		t.Errorf("after restart: %q", r.GetStdout())
	}
	if _, err := s.WaitClaimReady(ctx, ns.Name, c.Claim.Name); err != nil {
		t.Error(err)
	}
}

// metrics.k8s.io (metrics-server behind the API server's aggregator) answers for a sandbox
// pod, as `kubectl top pod` asks it.
func TestMetricsAPIReportsSandboxPods(t *testing.T) {
	s := requireStack(t)
	ctx := testContext(t)
	ns := s.Namespace(t)
	c, err := s.Claim(ctx, ns.Name, localstack.SandboxdPool)
	if err != nil {
		t.Fatal(err)
	}
	path := "/apis/metrics.k8s.io/v1beta1/namespaces/" + ns.Name + "/pods/" + c.Pod.Name
	var m struct {
		Containers []struct {
			Name  string            `json:"name"`
			Usage map[string]string `json:"usage"`
		} `json:"containers"`
	}
	var last error
	// A new pod has metrics after metrics-server's second scrape of it (resolution 15 s).
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		b, err := s.Kube.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		if last = err; err != nil {
			return false, nil
		}
		if last = json.Unmarshal(b, &m); last != nil {
			return false, nil
		}
		// Every container is measured: the forwarder too where v0.5's pools have one.
		return len(m.Containers) == len(c.Pod.Spec.Containers), nil
	})
	if err != nil {
		t.Fatalf("GET %s: %v (last: %v)", path, err, last)
	}
	for _, ct := range m.Containers {
		if ct.Usage["memory"] == "" || ct.Usage["cpu"] == "" {
			t.Errorf("container %s: usage %v, want cpu and memory", ct.Name, ct.Usage)
		}
	}
}
