// Package charts holds the tests of the Helm chart charts/k8s-sandbox-mcp: helm lint and helm
// template with the pinned Helm (hack/helm.sh), the objects it renders against deploy/'s
// kustomize manifests, its settings against the server's own parser, and values.schema.json.
package charts

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/charts/helmtest"
)

const (
	chart = "k8s-sandbox-mcp" // the chart's folder, beside this file
	// The release and namespace that reproduce deploy/'s names.
	release   = "k8s-sandbox-mcp"
	namespace = "k8s-sandbox-mcp"
)

// runHelm runs the pinned helm with no kubeconfig and Helm folders of its own.
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return helmtest.Run(t, helmtest.Helm(t, ".."), "", args...)
}

// template renders the chart with values as release in namespace.
func template(t *testing.T, values map[string]any) ([]unstructured.Unstructured, error) {
	t.Helper()
	out, err := runHelm(t, "template", release, chart, "--namespace", namespace, "-f", helmtest.ValuesFile(t, values))
	if err != nil {
		return nil, err
	}
	return parseObjects(t, out), nil
}

// mustTemplate is template that fails the test on an error.
func mustTemplate(t *testing.T, values map[string]any) []unstructured.Unstructured {
	t.Helper()
	objs, err := template(t, values)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// parseObjects reads a multi-document YAML stream into objects, skipping empty documents.
func parseObjects(t *testing.T, stream string) []unstructured.Unstructured {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(stream)))
	var objs []unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if len(m) > 0 {
			objs = append(objs, unstructured.Unstructured{Object: m})
		}
	}
}

// key names an object as kubectl does: Kind/namespace/name.
func key(o unstructured.Unstructured) string {
	return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// find returns the object of that kind and name, or fails the test.
func find(t *testing.T, objs []unstructured.Unstructured, kind, name string) unstructured.Unstructured {
	t.Helper()
	var names []string
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
		names = append(names, key(o))
	}
	t.Fatalf("no %s %s among %v", kind, name, names)
	return unstructured.Unstructured{}
}

// ofKind returns the objects of a kind.
func ofKind(objs []unstructured.Unstructured, kind string) []unstructured.Unstructured {
	var out []unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

func TestHelmLint(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"defaults":   {},
		"everything": everything(),
	} {
		t.Run(name, func(t *testing.T) {
			out, err := runHelm(t, "lint", "--strict", chart, "--namespace", namespace, "-f", helmtest.ValuesFile(t, values))
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

// everything turns on every optional part of the chart.
func everything() map[string]any {
	return map[string]any{
		"namespaces": []string{"team-a", "team-b"},
		"connection": map[string]any{"type": "gateway", "gateway": map[string]any{"name": "gw", "namespace": "gateways"}},
		"auth":       map[string]any{"tokens": map[string]any{"create": map[string]any{"alice": "0123456789abcdef0123"}}},
		"tools":      map[string]any{"toolsets": []string{"sandbox", "exec"}, "readOnly": true, "disableDestructive": true, "outputSchemas": true},
		"pins":       map[string]any{"namespace": "team-b", "warmpool": "python-pool", "labels": map[string]any{"team": "b"}},
		"settings":   map[string]any{"K8S_SANDBOX_API_QPS": "50"},
		"suspend":    map[string]any{"enabled": true, "autoResume": true, "pausesLifetime": true},
		"customSandboxes": map[string]any{"enabled": true, "allowedImages": []string{"registry.example.com/sandboxes/*"},
			"maxCPUMillicores": 4000, "maxMemoryMiB": 8192},
		"metrics":       map[string]any{"enabled": true, "profiling": true, "serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}}},
		"networkPolicy": map[string]any{"apiServerCIDRs": []string{"10.0.0.1/32"}, "ingressFrom": []any{map[string]any{"namespaceSelector": map[string]any{}}}},
	}
}
