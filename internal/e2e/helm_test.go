//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/charts/helmtest"
)

// TestHelmChart installs charts/k8s-sandbox-mcp with helm on the stack, into a namespace of its
// own that enforces Pod Security "restricted", serving a test namespace of its own; drives
// every tool through the installed Service and reads the installed metrics port; upgrades it
// to another connection type and drives every tool again; then uninstalls it and checks that no object of the release is left, cluster-scoped ones included.
func TestHelmChart(t *testing.T) {
	t.Parallel()
	helm := helmtest.Helm(t, stack.RepoRoot)
	ns := stack.Namespace(t, bothPools...)
	ctx := t.Context()
	server, err := stack.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "helm-e2e-", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stack.Kube.CoreV1().Namespaces().Delete(context.Background(), server.Name, metav1.DeleteOptions{})
	})
	release := "e2e-" + randomHex(t)[:8]
	name := release + "-k8s-sandbox-mcp" // the chart's fullname
	token := randomHex(t)
	repo, tag := serverImage(t)
	values := map[string]any{
		"image":      map[string]any{"repository": repo, "tag": tag},
		"namespaces": []string{ns.Name},
		"auth":       map[string]any{"tokens": map[string]any{"create": map[string]any{"alice": token}}},
		// The API server's port on this node, as the stack's overlay of deploy/ adds it.
		"networkPolicy": map[string]any{"apiServerPorts": []int{443, 6443, 16443}},
		// The HPA pinned to its minimum, as the overlay pins it: the node's load does not move it.
		"autoscaling": map[string]any{"maxReplicas": 2},
		"metrics":     map[string]any{"enabled": true},
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := helmtest.Run(t, helm, stack.Kubeconfig, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	chart := filepath.Join(stack.RepoRoot, "charts", "k8s-sandbox-mcp")
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			_, _ = helmtest.Run(t, helm, stack.Kubeconfig, "uninstall", release, "--namespace", server.Name, "--wait", "--timeout", "3m")
		}
	})
	start := time.Now()
	run("install", release, chart, "--namespace", server.Name, "-f", helmtest.ValuesFile(t, values), "--wait", "--timeout", "5m")
	kubectl(t, "-n", server.Name, "rollout", "status", "deploy/"+name, "--timeout=180s")
	t.Logf("helm install and rollout: %v", time.Since(start).Round(time.Second))

	svc, err := stack.Kube.CoreV1().Services(server.Name).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://%s:%d", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)
	cs, err := authSession(t, base, token, "")
	if err != nil {
		t.Fatalf("connecting to the installed Service with the token the chart's Secret holds: %v", err)
	}
	// Two replicas behind the Service, as in TestServerAsAPod.
	scenarioWith(t, cs, ns.Name, "sandboxd-pool", 5*time.Second)
	if _, err := authSession(t, base, "wrong-"+token, ""); err == nil {
		t.Error("the installed server accepted a wrong token")
	}
	// The metrics port, through the Service (any replica: affinity is per port) and on each
	// pod: the replicas that served the scenario count its calls.
	metricsPort := svc.Spec.Ports[1].Port
	if body := get(t, fmt.Sprintf("http://%s:%d/metrics", svc.Spec.ClusterIP, metricsPort)); !strings.Contains(body, "k8s_sandbox_mcp_watched_namespaces") {
		t.Errorf("the Service's metrics port serves no server metrics:\n%.2000s", body)
	}
	pods, err := stack.Kube.CoreV1().Pods(server.Name).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release})
	if err != nil {
		t.Fatal(err)
	}
	counted := false
	for _, p := range pods.Items {
		body := get(t, fmt.Sprintf("http://%s:%d/metrics", p.Status.PodIP, metricsPort))
		counted = counted || strings.Contains(body, `k8s_sandbox_mcp_tool_calls_total{outcome="ok",tool="create_sandbox"}`)
	}
	if !counted {
		t.Errorf("no replica of %d counts the scenario's create_sandbox calls", len(pods.Items))
	}

	// helm upgrade to another connection type: the changed ConfigMap rolls the pods (the
	// template's checksum), and the new ones reach the python runtime by pod IP.
	serverPodNames := func() []string {
		pods, err := stack.Kube.CoreV1().Pods(server.Name).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		return names
	}
	before := serverPodNames()
	start = time.Now()
	run("upgrade", release, chart, "--namespace", server.Name, "--reuse-values", "--wait", "--timeout", "5m",
		"--set", "connection.type=in-cluster", "--set", "connection.inCluster.usePodIP=true")
	kubectl(t, "-n", server.Name, "rollout", "status", "deploy/"+name, "--timeout=180s")
	waitFor(t, 2*time.Minute, func() bool { // the old pods serve while they drain
		pods, err := stack.Kube.CoreV1().Pods(server.Name).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release})
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
	t.Logf("helm upgrade and rollout: %v", time.Since(start).Round(time.Second))
	cm, err := stack.Kube.CoreV1().ConfigMaps(server.Name).Get(ctx, name, metav1.GetOptions{})
	if err != nil || cm.Data["K8S_SANDBOX_CONNECTION__TYPE"] != "in-cluster" || cm.Data["K8S_SANDBOX_CONNECTION__MODE"] != "" {
		t.Fatalf("after the upgrade the ConfigMap holds %v (%v)", cm.Data, err)
	}
	if after := serverPodNames(); len(after) == 0 || slices.ContainsFunc(after, func(p string) bool { return slices.Contains(before, p) }) {
		t.Fatalf("the upgrade did not replace the server pods %v: now %v", before, after)
	}
	cs, err = authSession(t, base, token, "")
	if err != nil {
		t.Fatalf("after the upgrade: %v", err)
	}
	scenarioWith(t, cs, ns.Name, "python-pool", 5*time.Second)

	start = time.Now()
	run("uninstall", release, "--namespace", server.Name, "--wait", "--timeout", "3m")
	uninstalled = true
	// The pods and EndpointSlices go after their owners, through the garbage collector; pods
	// drain first (K8S_SANDBOX_HTTP__DRAIN_SECONDS).
	var left []string
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(2 * time.Second) {
		if left = releaseObjects(t, release); len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		t.Errorf("after helm uninstall, objects of release %s remain: %v", release, left)
	}
	t.Logf("helm uninstall until nothing is left: %v", time.Since(start).Round(time.Second))
	if out, err := helmtest.Run(t, helm, stack.Kubeconfig, "status", release, "--namespace", server.Name); err == nil {
		t.Errorf("helm still knows the release:\n%s", out)
	}
}

// serverImage is the image the stack's server overlay runs (the one stack.sh imports into the
// node's containerd), as repository and tag for the chart's values.
func serverImage(t *testing.T) (string, string) {
	t.Helper()
	for _, doc := range strings.Split(kubectl(t, "kustomize", stack.Env["SERVER_OVERLAY"]), "\n---\n") {
		var o struct {
			Kind string `json:"kind"`
			Spec struct {
				Template struct {
					Spec corev1.PodSpec `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatal(err)
		}
		if o.Kind != "Deployment" {
			continue
		}
		img := o.Spec.Template.Spec.Containers[0].Image
		i := strings.LastIndex(img, ":")
		if i < 0 || strings.Contains(img[i:], "/") || strings.Contains(img, "@") {
			t.Fatalf("the overlay's image %q is not repository:tag", img)
		}
		return img[:i], img[i+1:]
	}
	t.Fatalf("no Deployment in %s", stack.Env["SERVER_OVERLAY"])
	return "", ""
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

// releaseObjects lists every object, of every listable resource the API server serves,
// namespaced or cluster-scoped, that carries the release's instance label or is Helm's record
// of the release.
func releaseObjects(t *testing.T, release string) []string {
	t.Helper()
	lists, err := stack.Kube.Discovery().ServerPreferredResources() // an unavailable aggregated API is an error beside the rest
	if err != nil && len(lists) == 0 {
		t.Fatalf("discovery: %v", err)
	}
	cfg := rest.CopyConfig(stack.RestConfig)
	cfg.WarningHandler = rest.NoWarnings{} // listing deprecated kinds (Endpoints, ComponentStatus) warns
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if !strings.Contains(strings.Join(r.Verbs, ","), "list") || strings.Contains(r.Name, "/") {
				continue
			}
			res := dyn.Resource(gv.WithResource(r.Name))
			for _, sel := range []string{"app.kubernetes.io/instance=" + release, "owner=helm,name=" + release} {
				items, err := res.List(t.Context(), metav1.ListOptions{LabelSelector: sel})
				if err != nil {
					continue // e.g. metrics.k8s.io answers no label selection
				}
				for _, o := range items.Items {
					left = append(left, fmt.Sprintf("%s %s/%s", r.Kind, o.GetNamespace(), o.GetName()))
				}
			}
		}
	}
	return left
}
