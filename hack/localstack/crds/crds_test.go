package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const crdTwoVersions = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.io
spec:
  group: example.io
  names: {kind: Thing, plural: things}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
  - name: v1alpha1
    served: true
    storage: false
  conversion:
    strategy: Webhook
    webhook: {clientConfig: {service: {name: x, namespace: y}}}
`

func TestPatchCRD(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		wantErr string
	}{
		{"keeps v1beta1 and drops the webhook", crdTwoVersions, ""},
		{"no v1beta1", strings.ReplaceAll(crdTwoVersions, "name: v1beta1", "name: v2"), "no version v1beta1"},
		{"not a CRD", "apiVersion: v1\nkind: ConfigMap\n", "not a CustomResourceDefinition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d map[string]any
			if err := yaml.Unmarshal([]byte(tt.doc), &d); err != nil {
				t.Fatal(err)
			}
			err := patchCRD(d)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			spec := d["spec"].(map[string]any)
			vs := spec["versions"].([]any)
			if len(vs) != 1 || vs[0].(map[string]any)["name"] != "v1beta1" || vs[0].(map[string]any)["storage"] != true {
				t.Errorf("versions %v", vs)
			}
			if c := spec["conversion"].(map[string]any); len(c) != 1 || c["strategy"] != "None" {
				t.Errorf("conversion %v", c)
			}
		})
	}
}

// The real upstream CRDs must come out with v1beta1 only and no webhook.
func TestWritePatchedCRDsOnUpstreamCRDs(t *testing.T) {
	// download, not list: on a fresh machine the module may not be in the cache yet.
	out, err := exec.Command("go", "mod", "download", "-json", "sigs.k8s.io/agent-sandbox").Output()
	if err != nil {
		t.Fatalf("agent-sandbox module: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download: %q: %v", out, err)
	}
	dir := filepath.Join(mod.Dir, "k8s", "crds")
	var buf bytes.Buffer
	if err := writePatchedCRDs(&buf, dir); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	if n := strings.Count(s, "kind: CustomResourceDefinition"); n != 4 {
		t.Errorf("%d CRDs, want 4", n)
	}
	if strings.Contains(s, "v1alpha1") || strings.Contains(s, "Webhook") || strings.Count(s, "strategy: None") != 4 {
		t.Error("output still mentions v1alpha1 or a webhook conversion")
	}
}

func TestWritePatchedCRDsEmptyDir(t *testing.T) {
	if err := writePatchedCRDs(&bytes.Buffer{}, t.TempDir()); err == nil {
		t.Fatal("no error for a dir without CRDs")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("kind: [unclosed"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writePatchedCRDs(&bytes.Buffer{}, dir); err == nil {
		t.Fatal("no error for invalid YAML")
	}
}
