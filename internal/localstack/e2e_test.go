//go:build e2e

package localstack_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
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

func TestWarmPoolsHaveTwoReadyPodsOnDistinctLoopbackIPs(t *testing.T) {
	s := requireStack(t)
	ctx := testContext(t)
	ns := s.Namespace(t)
	pods, err := s.Kube.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 4 {
		t.Fatalf("got %d pods, want 2 per pool", len(pods.Items))
	}
	seen := map[string]string{}
	for _, p := range pods.Items {
		ip := net.ParseIP(p.Status.PodIP).To4()
		if ip == nil || ip[0] != 127 || ip[3] < 2 || ip[3] > 250 || p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s: phase %s ip %q, want Running on 127.0.0.2-250", p.Name, p.Status.Phase, p.Status.PodIP)
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
		if wp.Status.ReadyReplicas != 2 {
			t.Errorf("pool %s: readyReplicas %d, want 2", pool, wp.Status.ReadyReplicas)
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
	host := filepath.Join(s.PodDir(c.Pod), "workspace", "dir", "hello.txt")
	if st, err := os.Stat(host); err != nil || st.Sys().(*syscall.Stat_t).Uid == 0 {
		t.Errorf("file on host %s: %v (owned by root?)", host, err)
	}
}

func TestPythonRuntimeExecutesAndUploadsIntoItsOwnAppDir(t *testing.T) {
	s := requireStack(t)
	ctx := testContext(t)
	ns := s.Namespace(t)
	a, err := s.Claim(ctx, ns.Name, localstack.PythonPool)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Claim(ctx, ns.Name, localstack.PythonPool)
	if err != nil {
		t.Fatal(err)
	}
	baseA, baseB := "http://"+a.PodIP()+":8888", "http://"+b.PodIP()+":8888"
	r := pyExecute(ctx, t, baseA, nil, "id -u")
	if uid := strings.TrimSpace(r.Stdout); r.ExitCode != 0 || uid == "0" || uid == "" {
		t.Errorf("python /execute id -u: %+v, want an unprivileged uid", r)
	}
	if r := pyExecute(ctx, t, baseA, nil, "pwd"); strings.TrimSpace(r.Stdout) != "/app" {
		t.Errorf("python runtime cwd %q, want /app", r.Stdout)
	}
	pyUpload(ctx, t, baseA, "note.txt", []byte("only in A"))
	if code, body := httpDo(ctx, t, http.MethodGet, baseA+"/download/note.txt", nil); code != 200 || string(body) != "only in A" {
		t.Errorf("download from A: %d %q", code, body)
	}
	if _, body := httpDo(ctx, t, http.MethodGet, baseB+"/exists/note.txt", nil); !strings.Contains(string(body), `"exists":false`) {
		t.Errorf("B sees A's upload: %s", body)
	}
	if _, err := os.Stat(filepath.Join(s.PodDir(a.Pod), "app", "note.txt")); err != nil {
		t.Errorf("upload not in A's app dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.PodDir(b.Pod), "app", "note.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("upload visible in B's app dir: %v", err)
	}
}

func TestDeletingClaimStopsProcessesAndPoolRefills(t *testing.T) {
	s := requireStack(t)
	ctx := testContext(t)
	ns := s.Namespace(t)
	c, err := s.Claim(ctx, ns.Name, localstack.PythonPool)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := s.DaemonPIDs(ctx, ns.Name, c.Pod.Name)
	if err != nil || pids["sandboxd"] == 0 || pids["python"] == 0 {
		t.Fatalf("daemon pids %v %v", pids, err)
	}
	// A command that escapes into its own session must be stopped too.
	r := shExecute(ctx, t, processClient(t, c.PodIP()), "setsid sleep 600 >/dev/null 2>&1 & echo $!")
	orphan, err := strconv.Atoi(strings.TrimSpace(string(r.GetStdout())))
	if err != nil || !running(orphan) {
		t.Fatalf("background sleep: %q %v", r.GetStdout(), err)
	}
	for name, pid := range pids {
		if !running(pid) {
			t.Fatalf("%s pid %d not running before delete", name, pid)
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
	for name, pid := range pids {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s pid %d still exists after the pod is gone", name, pid)
		}
	}
	// The node agent is the orphan's subreaper, so it is not even left as a zombie.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat("/proc/" + strconv.Itoa(orphan))
		return errors.Is(err, os.ErrNotExist), nil
	}); err != nil {
		t.Errorf("background command pid %d survived the pod (running: %v)", orphan, running(orphan))
	}
	if _, err := os.Stat(s.PodDir(c.Pod)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod dir left behind: %v", err)
	}
	if err := s.WaitPoolReady(ctx, ns.Name, localstack.PythonPool, 2); err != nil {
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
	before, err := s.DaemonPIDs(ctx, ns.Name, c.Pod.Name)
	if err != nil || before["sandboxd"] == 0 {
		t.Fatalf("daemon pids %v %v", before, err)
	}
	if err := syscall.Kill(before["sandboxd"], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var after map[string]int
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := s.Kube.CoreV1().Pods(ns.Name).Get(ctx, c.Pod.Name, metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, nil
		}
		after, _ = s.DaemonPIDs(ctx, ns.Name, c.Pod.Name)
		cs := p.Status.ContainerStatuses[0]
		return cs.Ready && cs.RestartCount >= 1 && after["sandboxd"] != 0 && after["sandboxd"] != before["sandboxd"], nil
	})
	if err != nil {
		t.Fatalf("pod not Ready again with a new sandboxd: %v (pids %v)", err, after)
	}
	if r := shExecute(ctx, t, processClient(t, c.PodIP()), "echo back"); string(r.GetStdout()) != "back\n" {
		t.Errorf("after restart: %q", r.GetStdout())
	}
	if _, err := s.WaitClaimReady(ctx, ns.Name, c.Claim.Name); err != nil {
		t.Error(err)
	}
}
