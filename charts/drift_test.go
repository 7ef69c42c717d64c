package charts

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// helmOnly are the label and annotation keys the chart adds to deploy/'s: Helm's standard labels
// (the release's instance also selects its pods, so that two releases do not select each other's)
// and the pod template's checksum of the ConfigMap, which rolls the pods when `helm upgrade`
// changes a setting. The comparison removes them wherever they appear; nothing else may differ.
var helmOnly = []string{
	"app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by",
	"helm.sh/chart", "checksum/config",
}

// TestChartRendersDeploy proves that the chart and deploy/ do not drift: with values matching
// deploy/'s configuration (its defaults, and each kustomize component), `helm template` renders
// the objects `kustomize build` does, compared parsed, field by field. Two differences are
// the chart's by design: it creates no Namespace (helm install --namespace, --create-namespace),
// and with the HPA on it leaves the Deployment's replica count to the HPA (deploy/ sets it to
// the HPA's minimum; a count in the chart would reset the HPA's on every upgrade).
func TestChartRendersDeploy(t *testing.T) {
	for _, c := range []struct {
		name       string
		components []string
		values     map[string]any
	}{
		{"defaults", nil, map[string]any{}},
		{"gateway", []string{"gateway"}, map[string]any{"connection": map[string]any{"type": "gateway"}}},
		{"suspend", []string{"suspend"}, map[string]any{"suspend": map[string]any{"enabled": true}}},
		{"custom-sandboxes", []string{"custom-sandboxes"}, customValues()},
		{"all components", []string{"gateway", "custom-sandboxes", "suspend"}, merge(customValues(), map[string]any{
			"connection": map[string]any{"type": "gateway"}, "suspend": map[string]any{"enabled": true}})},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := map[string]unstructured.Unstructured{}
			for _, o := range kustomize(t, c.components) {
				if o.GetKind() == "Namespace" {
					continue
				}
				if o.GetKind() == "Deployment" {
					unstructured.RemoveNestedField(o.Object, "spec", "replicas")
				}
				want[key(o)] = o
			}
			got := map[string]unstructured.Unstructured{}
			for _, o := range mustTemplate(t, c.values) {
				strip(o.Object)
				got[key(o)] = o
			}
			for k, w := range want {
				g, ok := got[k]
				if !ok {
					t.Errorf("the chart renders no %s", k)
					continue
				}
				if !reflect.DeepEqual(g.Object, w.Object) {
					t.Errorf("%s differs at %v.\nchart:\n%s\ndeploy/:\n%s", k, diffPaths("", g.Object, w.Object), toYAML(t, g.Object), toYAML(t, w.Object))
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("the chart renders %s, which deploy/ does not have", k)
				}
			}
		})
	}
}

// customValues are the chart's values for deploy/custom-sandboxes's settings.
func customValues() map[string]any {
	return map[string]any{"customSandboxes": map[string]any{"enabled": true, "allowedImages": []string{"registry.example.com/sandboxes/*"}}}
}

func merge(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// kustomize builds deploy/ with the components named, as `kubectl apply -k` would with them
// uncommented in deploy/kustomization.yaml: an overlay over a copy of deploy/ in memory.
func kustomize(t *testing.T, components []string) []unstructured.Unstructured {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	root := filepath.Join("..", "deploy")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		return mem.WriteFile(filepath.Join("/deploy", rel), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	overlay := "resources: [../deploy]\ncomponents:\n"
	for _, c := range components {
		overlay += "- ../deploy/" + c + "\n"
	}
	if len(components) == 0 {
		overlay = "resources: [../deploy]\n"
	}
	if err := mem.WriteFile("/overlay/kustomization.yaml", []byte(overlay)); err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/overlay")
	if err != nil {
		t.Fatalf("kustomize build deploy/ with %v: %v", components, err)
	}
	// Through YAML, as helm's output is read, so both sides hold the same Go types.
	out, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return parseObjects(t, string(out))
}

// strip removes helmOnly's keys from every map in v, and the maps they leave empty.
func strip(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if slices.Contains(helmOnly, k) {
				delete(v, k)
				continue
			}
			strip(e)
			if m, ok := e.(map[string]any); ok && len(m) == 0 && (k == "annotations" || k == "labels") {
				delete(v, k)
			}
		}
	case []any:
		for _, e := range v {
			strip(e)
		}
	}
}

// diffPaths lists the paths (.spec.replicas, .spec.ports[1]) where a and b differ.
func diffPaths(path string, a, b any) []string {
	switch a := a.(type) {
	case map[string]any:
		if b, ok := b.(map[string]any); ok {
			var out []string
			for k := range a {
				out = append(out, diffPaths(path+"."+k, a[k], b[k])...)
			}
			for k := range b {
				if _, ok := a[k]; !ok {
					out = append(out, path+"."+k)
				}
			}
			slices.Sort(out)
			return out
		}
	case []any:
		if b, ok := b.([]any); ok && len(a) == len(b) {
			var out []string
			for i := range a {
				out = append(out, diffPaths(fmt.Sprintf("%s[%d]", path, i), a[i], b[i])...)
			}
			return out
		}
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	return []string{path}
}

func toYAML(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
