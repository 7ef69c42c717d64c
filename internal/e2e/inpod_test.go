//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const (
	serverNS     = "k8s-sandbox-mcp"                        // deploy/namespace.yaml
	serverDeploy = "k8s-sandbox-mcp"                        // deploy/deployment.yaml
	serverPods   = "app.kubernetes.io/name=k8s-sandbox-mcp" // its pods' selector
)

// kubectl runs the stack's kubectl and fails the test with its output on error.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(stack.Env["KUBECTL"], append([]string{"--kubeconfig", stack.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestServerAsAPod deploys the server from deploy/ (Deployment, ServiceAccount, RBAC, probes,
// the tokens Secret; in-cluster config) as a pod on the node and drives every tool through its
// Service from outside the pod, for each in-cluster connection type; then kills the pod
// mid-run: the Deployment replaces it and a sessionless client carries on with its sandbox.
func TestServerAsAPod(t *testing.T) {
	t.Parallel()
	// It uses namespace default's pools, which deploy/ allows (no other test of this package
	// claims from them), and deploy/'s own namespace, which it deletes at the end.
	holdShippedNamespace(t)
	ctx := t.Context()
	token := randomHex(t)
	// This checkout's overlay (the stack may have been brought up from another clone): deploy/
	// with its image name, which the node has as hack/image.sh built it (images.sh server).
	overlay := filepath.Join(stack.RepoRoot, "hack", "localstack", "manifests", "server")
	kubectl(t, "apply", "-f", stack.RepoRoot+"/deploy/namespace.yaml")
	t.Cleanup(func() {
		_, _ = exec.Command(stack.Env["KUBECTL"], "--kubeconfig", stack.Kubeconfig, "delete", "-k", overlay,
			"--ignore-not-found", "--wait=true", "--timeout=90s").CombinedOutput()
	})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "k8s-sandbox-mcp-tokens", Namespace: serverNS},
		StringData: map[string]string{"tokens": "alice:" + token + "\n"}}
	if _, err := stack.Kube.CoreV1().Secrets(serverNS).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "-k", overlay)
	svc, err := stack.Kube.CoreV1().Services(serverNS).Get(ctx, serverDeploy, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://%s:%d", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)

	settings := []struct {
		name, pool string
		env        map[string]string
	}{
		{"sandboxd-pod-ip", "sandboxd-pool", map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "sandboxd-in-cluster", "K8S_SANDBOX_CONNECTION__MODE": "in-cluster-pod-ip"}},
		{"sandboxd-service", "sandboxd-pool", map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "sandboxd-in-cluster", "K8S_SANDBOX_CONNECTION__MODE": "in-cluster-service"}},
		{"in-cluster-pod-ip", "python-pool", map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_CONNECTION__USE_POD_IP": "true"}},
		{"in-cluster-dns", "python-pool", map[string]string{"K8S_SANDBOX_CONNECTION__TYPE": "in-cluster", "K8S_SANDBOX_CONNECTION__USE_POD_IP": "false"}},
	}
	for i, s := range settings {
		if i > 0 { // the first is deploy/configmap.yaml's own setting
			patch := `{"data":{`
			first := true
			for k, v := range s.env {
				if !first {
					patch += ","
				}
				patch += fmt.Sprintf("%q:%q", k, v)
				first = false
			}
			if _, ok := s.env["K8S_SANDBOX_CONNECTION__MODE"]; !ok {
				patch += `,"K8S_SANDBOX_CONNECTION__MODE":null`
			}
			patch += "}}"
			kubectl(t, "-n", serverNS, "patch", "configmap", serverDeploy, "--type=merge", "-p", patch)
			kubectl(t, "-n", serverNS, "rollout", "restart", "deploy/"+serverDeploy)
		}
		rolledOut(t)
		t.Run(s.name, func(t *testing.T) {
			cs, err := authSession(t, base, token, "")
			if err != nil {
				t.Fatalf("connecting to the server's Service: %v", err)
			}
			// Two replicas behind the Service: the one that did not delete learns of it by its
			// watch, as TestReplicas allows.
			scenarioWith(t, cs, "default", s.pool, 5*time.Second)
		})
	}

	t.Run("runs deploy/'s image, side-loaded", func(t *testing.T) {
		// The image deploy/deployment.yaml names (a release's), which the node holds as
		// hack/image.sh built it from this clone: the kubelet finds it present and pulls nothing.
		pods, err := stack.Kube.CoreV1().Pods(serverNS).List(ctx, metav1.ListOptions{LabelSelector: serverPods})
		if err != nil || len(pods.Items) == 0 {
			t.Fatalf("server pods: %v", err)
		}
		var d appsv1.Deployment
		data, err := os.ReadFile(filepath.Join(stack.RepoRoot, "deploy", "deployment.yaml"))
		if err != nil || yaml.Unmarshal(data, &d) != nil || len(d.Spec.Template.Spec.Containers) == 0 {
			t.Fatalf("deploy/deployment.yaml: %v", err)
		}
		want := d.Spec.Template.Spec.Containers[0].Image
		for _, p := range pods.Items {
			if got := p.Spec.Containers[0].Image; got != want {
				t.Errorf("pod %s runs %s, want deploy/'s %s", p.Name, got, want)
			}
			waitFor(t, 30*time.Second, func() bool {
				evs, err := stack.Kube.CoreV1().Events(serverNS).List(ctx, metav1.ListOptions{
					FieldSelector: "involvedObject.kind=Pod,involvedObject.name=" + p.Name})
				if err != nil {
					return false
				}
				for _, e := range evs.Items {
					if e.Reason == "Pulling" {
						t.Fatalf("the kubelet pulled the server's image: %s", e.Message)
					}
					if e.Reason == "Pulled" {
						if !strings.Contains(e.Message, `"`+want+`" already present on machine`) {
							t.Fatalf("kubelet event Pulled: %q, want %s already present", e.Message, want)
						}
						return true
					}
				}
				return false
			})
		}
	})

	t.Run("rolling restart and a pod killed mid-run", func(t *testing.T) {
		cs, err := authSession(t, base, token, "") // the default era: sessionless
		if err != nil {
			t.Fatal(err)
		}
		c := call[createResult](t, cs, "create_sandbox", map[string]any{"warmpool": "python-pool", "namespace": "default"})
		t.Cleanup(func() {
			_ = stack.Extensions.ExtensionsV1beta1().SandboxClaims("default").Delete(context.Background(), c.SandboxClaimName, metav1.DeleteOptions{})
		})
		claim := map[string]any{"sandbox_claim_name": c.SandboxClaimName, "namespace": "default"}
		echo := func(text string) (string, error) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_command", Arguments: map[string]any{
				"sandbox_claim_name": c.SandboxClaimName, "namespace": "default", "command": "echo " + text}})
			if err != nil {
				return "", err
			}
			var ex execResult
			b, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(b, &ex)
			if res.IsError || ex.Stdout != text+"\n" {
				return "", fmt.Errorf("isError=%v %+v", res.IsError, res.Content)
			}
			return ex.Stdout, nil
		}
		servers := func() (ready []string, all int) {
			pods, err := stack.Kube.CoreV1().Pods(serverNS).List(ctx, metav1.ListOptions{LabelSelector: serverPods})
			if err != nil {
				return nil, 0
			}
			for _, p := range pods.Items {
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
						ready = append(ready, p.Name)
					}
				}
			}
			return ready, len(pods.Items)
		}
		// The HPA (deploy/hpa.yaml) would scale out under this test's calls on a busy node; the
		// stack's overlay pins it to deploy/'s two replicas, so the count never moves under a read.
		const replicas = 2
		if ready, _ := servers(); len(ready) != replicas {
			t.Fatalf("ready server pods %v, want deploy/'s %d replicas%s", ready, replicas, podStates(ctx, t, serverNS))
		}

		// Every replica is replaced one at a time while calls keep coming: each stopping
		// replica turns unready, finishes what it has, and closes its connections, so no call
		// fails (the PodDisruptionBudget and maxUnavailable: 0 keep one serving).
		stop := make(chan struct{})
		var calls, failed int
		var firstErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				calls++
				if _, err := echo(fmt.Sprint("call-", i)); err != nil {
					failed++
					if firstErr == nil {
						firstErr = err
					}
				}
			}
		}()
		kubectl(t, "-n", serverNS, "rollout", "restart", "deploy/"+serverDeploy)
		rolledOut(t)
		close(stop)
		<-done
		t.Logf("calls during the rolling restart: %d, failed: %d", calls, failed)
		if failed > 0 || calls < 10 {
			t.Errorf("%d of %d calls failed during the rolling restart (first: %v)", failed, calls, firstErr)
		}

		ready, _ := servers()
		if len(ready) != replicas {
			t.Fatalf("after the rollout: ready %v, want deploy/'s %d replicas%s", ready, replicas, podStates(ctx, t, serverNS))
		}
		zero := int64(0)
		if err := stack.Kube.CoreV1().Pods(serverNS).Delete(ctx, ready[0], metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		// The Deployment replaces it; the same sessionless client, through the Service, then
		// carries on with the sandbox it created before (ownership is the principal's label).
		// Longer than other waits: under the whole suite the node is busy with other tests'
		// sandboxes; on failure the pods' states say whether the replacement was unscheduled,
		// starting or unready.
		const replaceWait = 180 * time.Second
		replaced := func() bool {
			now, all := servers()
			return len(now) == replicas && all == replicas && !slices.Contains(now, ready[0])
		}
		for deadline := time.Now().Add(replaceWait); !replaced(); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the killed replica %s was not replaced by a ready one within %v: %s", ready[0], replaceWait, podStates(ctx, t, serverNS))
			}
		}
		if _, err := echo("carried-on"); err != nil {
			t.Errorf("after a replica was killed: %v", err)
		}
		call[map[string]any](t, cs, "delete_sandbox", claim)
		claimGone(t, "default", c.SandboxClaimName, 30*time.Second)
	})
}

// rolledOut waits for the Deployment's rollout and then for its old pods to be gone: they serve
// while they drain (K8S_SANDBOX_HTTP__DRAIN_SECONDS), with the settings they started with.
func rolledOut(t *testing.T) {
	t.Helper()
	kubectl(t, "-n", serverNS, "rollout", "status", "deploy/"+serverDeploy, "--timeout=180s")
	waitFor(t, 120*time.Second, func() bool {
		pods, err := stack.Kube.CoreV1().Pods(serverNS).List(t.Context(), metav1.ListOptions{LabelSelector: serverPods})
		if err != nil {
			return false
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				return false
			}
		}
		return true
	})
}

func randomHex(t *testing.T) string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// podStates is one line per server pod: phase, deleting or not, and the reasons its
// conditions and containers give.
func podStates(ctx context.Context, t *testing.T, namespace string) string {
	t.Helper()
	pods, err := stack.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: serverPods})
	if err != nil {
		return "listing pods: " + err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "\n  %s %s deleting=%v", p.Name, p.Status.Phase, p.DeletionTimestamp != nil)
		for _, c := range p.Status.Conditions {
			fmt.Fprintf(&b, " %s=%s", c.Type, c.Status)
			if c.Reason != "" {
				fmt.Fprintf(&b, "(%s: %s)", c.Reason, c.Message)
			}
		}
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil {
				fmt.Fprintf(&b, " %s waiting (%s: %s)", c.Name, w.Reason, w.Message)
			}
			fmt.Fprintf(&b, " %s restarts=%d", c.Name, c.RestartCount)
		}
	}
	return b.String()
}
