package charts

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/charts/helmtest"
)

// names lists Kind/namespace/name of the objects of the kinds given.
func names(objs []unstructured.Unstructured, kinds ...string) []string {
	var out []string
	for _, o := range objs {
		if slices.Contains(kinds, o.GetKind()) {
			out = append(out, key(o))
		}
	}
	slices.Sort(out)
	return out
}

func field(t *testing.T, o unstructured.Unstructured, path ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(o.Object, path...)
	if err != nil || !ok {
		t.Fatalf("%s has no %s (%v)", key(o), strings.Join(path, "."), err)
	}
	return v
}

// TestChartOptions checks what each value that deploy/ has no counterpart for renders.
func TestChartOptions(t *testing.T) {
	const sa = "k8s-sandbox-mcp"
	cases := []struct {
		name   string
		values map[string]any
		check  func(t *testing.T, objs []unstructured.Unstructured)
	}{
		{"namespaces: a RoleBinding each, the first the default", map[string]any{"namespaces": []string{"team-a", "team-b"},
			"suspend": map[string]any{"enabled": true}, "customSandboxes": customValues()["customSandboxes"]},
			func(t *testing.T, objs []unstructured.Unstructured) {
				want := []string{
					"RoleBinding/team-a/k8s-sandbox-mcp", "RoleBinding/team-a/k8s-sandbox-mcp-custom-sandboxes", "RoleBinding/team-a/k8s-sandbox-mcp-suspend",
					"RoleBinding/team-b/k8s-sandbox-mcp", "RoleBinding/team-b/k8s-sandbox-mcp-custom-sandboxes", "RoleBinding/team-b/k8s-sandbox-mcp-suspend",
				}
				if got := names(objs, "RoleBinding"); !slices.Equal(got, want) {
					t.Errorf("RoleBindings %v, want %v", got, want)
				}
				for _, rb := range ofKind(objs, "RoleBinding") {
					subj := field(t, rb, "subjects").([]any)[0].(map[string]any)
					if subj["name"] != sa || subj["namespace"] != namespace {
						t.Errorf("%s binds %v", key(rb), subj)
					}
				}
				vars := settings(t, objs)
				if vars["K8S_SANDBOX_ALLOWED_NAMESPACES"] != "team-a,team-b" || vars["K8S_SANDBOX_PROBE_NAMESPACE"] != "team-a" {
					t.Errorf("settings %v", vars)
				}
				if a := args(t, objs); !slices.Equal(a[:4], []string{"--http", "0.0.0.0:8000", "--namespace", "team-a"}) {
					t.Errorf("args %v", a)
				}
				to := field(t, find(t, objs, "NetworkPolicy", sa), "spec", "egress").([]any)[1].(map[string]any)["to"].([]any)
				var served []string
				for _, peer := range to {
					ns, _, _ := unstructured.NestedString(peer.(map[string]any), "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name")
					served = append(served, ns)
				}
				if !slices.Equal(served, []string{"team-a", "team-b"}) {
					t.Errorf("egress to sandboxes in %v", served)
				}
			}},
		{"gateway: read access in the Gateway's namespace, egress to port 80",
			map[string]any{"connection": map[string]any{"type": "gateway", "gateway": map[string]any{"name": "gw", "namespace": "gateways"}}},
			func(t *testing.T, objs []unstructured.Unstructured) {
				find(t, objs, "ClusterRole", sa+"-gateways")
				if rb := find(t, objs, "RoleBinding", sa+"-gateways"); rb.GetNamespace() != "gateways" {
					t.Errorf("%s", key(rb))
				}
				egress := field(t, find(t, objs, "NetworkPolicy", sa), "spec", "egress").([]any)
				last := egress[len(egress)-1].(map[string]any)["ports"].([]any)[0].(map[string]any)
				if last["port"] != float64(80) {
					t.Errorf("last egress rule %v", last)
				}
				if vars := settings(t, objs); vars["K8S_SANDBOX_CONNECTION__GATEWAY_NAME"] != "gw" || vars["K8S_SANDBOX_CONNECTION__MODE"] != "" {
					t.Errorf("settings %v", vars)
				}
			}},
		{"no authentication: --insecure-no-auth and no Secret", map[string]any{"auth": map[string]any{"mode": "none"}},
			func(t *testing.T, objs []unstructured.Unstructured) {
				if a := args(t, objs); !slices.Contains(a, "--insecure-no-auth") {
					t.Errorf("args %v", a)
				}
				noTokens(t, objs)
			}},
		{"OIDC: no Secret", map[string]any{"auth": map[string]any{"mode": "oidc", "oidc": map[string]any{"issuer": "https://issuer.example.com", "audience": "mcp"}}},
			func(t *testing.T, objs []unstructured.Unstructured) {
				if a := args(t, objs); slices.Contains(a, "--insecure-no-auth") {
					t.Errorf("args %v", a)
				}
				noTokens(t, objs)
			}},
		{"tokens given: the chart creates the Secret the pod mounts", map[string]any{"auth": map[string]any{"tokens": map[string]any{
			"secretName": "my-tokens", "create": map[string]any{"bob": "bbbbbbbbbbbbbbbbbbbb", "alice": "aaaaaaaaaaaaaaaaaaaa"}}}},
			func(t *testing.T, objs []unstructured.Unstructured) {
				s := find(t, objs, "Secret", "my-tokens")
				if got := field(t, s, "stringData", "tokens"); got != "alice:aaaaaaaaaaaaaaaaaaaa\nbob:bbbbbbbbbbbbbbbbbbbb\n" {
					t.Errorf("tokens %q", got)
				}
				vols := field(t, ofKind(objs, "Deployment")[0], "spec", "template", "spec", "volumes").([]any)
				if name, _, _ := unstructured.NestedString(vols[0].(map[string]any), "secret", "secretName"); name != "my-tokens" {
					t.Errorf("volumes %v", vols)
				}
			}},
		{"no tokens given: no Secret", map[string]any{},
			func(t *testing.T, objs []unstructured.Unstructured) {
				if s := names(objs, "Secret"); len(s) > 0 {
					t.Errorf("%v", s)
				}
			}},
		{"metrics and a ServiceMonitor", map[string]any{"metrics": map[string]any{"enabled": true, "port": 9200, "serviceMonitor": map[string]any{"enabled": true}}},
			func(t *testing.T, objs []unstructured.Unstructured) {
				if a := args(t, objs); !slices.Contains(a, "0.0.0.0:9200") || slices.Contains(a, "--profiling") {
					t.Errorf("args %v", a)
				}
				ports := field(t, find(t, objs, "Service", sa), "spec", "ports").([]any)
				if len(ports) != 2 || ports[1].(map[string]any)["port"] != float64(9200) {
					t.Errorf("Service ports %v", ports)
				}
				if ing := field(t, find(t, objs, "NetworkPolicy", sa), "spec", "ingress").([]any); len(ing) != 2 {
					t.Errorf("ingress %v", ing)
				}
				if sm := find(t, objs, "ServiceMonitor", sa); field(t, sm, "spec", "endpoints").([]any)[0].(map[string]any)["port"] != "metrics" {
					t.Errorf("%v", sm.Object)
				}
			}},
		{"metrics off: no metrics port, no ServiceMonitor", map[string]any{},
			func(t *testing.T, objs []unstructured.Unstructured) {
				if a := args(t, objs); slices.Contains(a, "--metrics-addr") {
					t.Errorf("args %v", a)
				}
				if sm := names(objs, "ServiceMonitor"); len(sm) > 0 {
					t.Errorf("%v", sm)
				}
			}},
		{"no HPA, PDB, NetworkPolicy: a fixed replica count", map[string]any{"replicas": 3,
			"autoscaling": map[string]any{"enabled": false}, "podDisruptionBudget": map[string]any{"enabled": false}, "networkPolicy": map[string]any{"enabled": false}},
			func(t *testing.T, objs []unstructured.Unstructured) {
				if n := names(objs, "HorizontalPodAutoscaler", "PodDisruptionBudget", "NetworkPolicy"); len(n) > 0 {
					t.Errorf("%v", n)
				}
				if r := field(t, ofKind(objs, "Deployment")[0], "spec", "replicas"); r != float64(3) {
					t.Errorf("replicas %v", r)
				}
			}},
		{"tools, pins and settings", map[string]any{"namespaces": []string{"a", "b"},
			"tools": map[string]any{"toolsets": []string{"sandbox", "exec"}, "readOnly": true},
			"pins":  map[string]any{"namespace": "b", "warmpool": "python-pool", "labels": map[string]any{"team": "b", "app": "x"}}, "settings": map[string]any{"K8S_SANDBOX_API_QPS": "50"}},
			func(t *testing.T, objs []unstructured.Unstructured) {
				vars := settings(t, objs)
				for k, want := range map[string]string{"K8S_SANDBOX_TOOLSETS": "sandbox,exec", "K8S_SANDBOX_READ_ONLY": "true",
					"K8S_SANDBOX_PIN__NAMESPACE": "b", "K8S_SANDBOX_PIN__WARMPOOL": "python-pool", "K8S_SANDBOX_PIN__LABELS": "app=x,team=b",
					"K8S_SANDBOX_API_QPS": "50"} {
					if vars[k] != want {
						t.Errorf("%s=%q, want %q", k, vars[k], want)
					}
				}
			}},
		{"image by digest", map[string]any{"image": map[string]any{"repository": "registry.example.com/k8s-sandbox-mcp", "digest": "sha256:" + strings.Repeat("ab", 32)}},
			func(t *testing.T, objs []unstructured.Unstructured) {
				if img := container(t, objs)["image"]; img != "registry.example.com/k8s-sandbox-mcp@sha256:"+strings.Repeat("ab", 32) {
					t.Errorf("image %v", img)
				}
			}},
		{"every object carries the release's labels (helm uninstall's check finds them by it)", everything(),
			func(t *testing.T, objs []unstructured.Unstructured) {
				for _, o := range objs {
					if l := o.GetLabels(); l["app.kubernetes.io/instance"] != release || l["app.kubernetes.io/name"] != "k8s-sandbox-mcp" {
						t.Errorf("%s labels %v", key(o), l)
					}
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.check(t, mustTemplate(t, c.values)) })
	}
}

// noTokens checks that nothing refers to a tokens Secret.
func noTokens(t *testing.T, objs []unstructured.Unstructured) {
	t.Helper()
	if _, ok := settings(t, objs)["K8S_SANDBOX_AUTH__TOKENS_FILE"]; ok {
		t.Error("K8S_SANDBOX_AUTH__TOKENS_FILE is set")
	}
	for _, v := range field(t, ofKind(objs, "Deployment")[0], "spec", "template", "spec", "volumes").([]any) {
		if v.(map[string]any)["name"] == "auth" {
			t.Errorf("volume %v", v)
		}
	}
	if s := names(objs, "Secret"); len(s) > 0 {
		t.Errorf("%v", s)
	}
}

// TestReleaseNames: another release's objects take its name, so two installs do not collide.
func TestReleaseNames(t *testing.T) {
	out, err := runHelm(t, "template", "team-a", chart, "--namespace", "mcp", "-f", helmtest.ValuesFile(t, everything()))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range parseObjects(t, out) {
		if !strings.HasPrefix(o.GetName(), "team-a-k8s-sandbox-mcp") {
			t.Errorf("%s is not named after the release", key(o))
		}
		if l := o.GetLabels(); l["app.kubernetes.io/instance"] != "team-a" {
			t.Errorf("%s labels %v", key(o), l)
		}
	}
}
