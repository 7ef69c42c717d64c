// Package charts holds the tests of the Helm chart charts/k8s-sandbox-mcp: helm lint and helm
// template with the pinned Helm (hack/helm.sh), the objects it renders against deploy/'s
// kustomize manifests, its settings against the server's own parser, and values.schema.json.
package charts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const (
	chart = "k8s-sandbox-mcp" // the chart's folder, beside this file
	// The release and namespace that reproduce deploy/'s names.
	release   = "k8s-sandbox-mcp"
	namespace = "k8s-sandbox-mcp"
)

var (
	helmOnce sync.Once
	helmBin  string
	helmErr  error
)

// helm is the path of the pinned Helm, installed by hack/helm.sh if it is not yet (a build from
// the Go module proxy, minutes the first time). Without it the test is skipped, except in CI,
// where hack/deps.sh has installed it.
func helm(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		var stderr bytes.Buffer
		cmd := exec.Command(filepath.Join("..", "hack", "helm.sh"), "--path")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			helmErr = fmt.Errorf("hack/helm.sh --path: %w\n%s", err, stderr.String())
			return
		}
		helmBin = strings.TrimSpace(string(out))
	})
	if helmErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("helm cannot be obtained: %v", helmErr)
		}
		t.Skipf("helm cannot be obtained (hack/helm.sh builds it from the Go module proxy): %v", helmErr)
	}
	return helmBin
}

// runHelm runs helm with its home folders in a temporary folder: nothing of the user's Helm
// configuration (repositories, plugins) takes part. It returns stdout, or an error with stderr.
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := helm(t)
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config",
		"HELM_DATA_HOME="+home+"/data", "KUBECONFIG="+home+"/no-kubeconfig")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// valuesFile writes values (JSON is YAML) to a file for helm's -f.
func valuesFile(t *testing.T, values map[string]any) string {
	t.Helper()
	b, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	// Not under t.TempDir(), whose name holds the test's: helm splits -f at commas.
	f, err := os.CreateTemp("", "chart-values-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(f.Name()) })
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// template renders the chart with values as release in namespace.
func template(t *testing.T, values map[string]any) ([]unstructured.Unstructured, error) {
	t.Helper()
	out, err := runHelm(t, "template", release, chart, "--namespace", namespace, "-f", valuesFile(t, values))
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
			out, err := runHelm(t, "lint", "--strict", chart, "--namespace", namespace, "-f", valuesFile(t, values))
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
