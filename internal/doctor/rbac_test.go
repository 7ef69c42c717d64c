package doctor

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// TestVerbsMatchDeploy: the table doctor checks is exactly what the ClusterRoles of deploy/
// grant, component by component, so that a verb added to a role is checked and one removed
// is not demanded.
func TestVerbsMatchDeploy(t *testing.T) {
	root := filepath.Join("..", "..", "deploy")
	files := map[string]string{
		componentBase:    filepath.Join(root, "rbac.yaml"),
		componentSuspend: filepath.Join(root, "suspend", "rbac.yaml"),
		componentCustom:  filepath.Join(root, "custom-sandboxes", "rbac.yaml"),
		componentGateway: filepath.Join(root, "gateway", "rbac.yaml"),
	}
	var granted []string
	for component, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			var cr rbacv1.ClusterRole
			if err := yaml.Unmarshal(doc, &cr); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if cr.Kind != "ClusterRole" {
				continue
			}
			for _, rule := range cr.Rules {
				for _, g := range rule.APIGroups {
					for _, res := range rule.Resources {
						for _, v := range rule.Verbs {
							granted = append(granted, component+":"+g+"/"+res+"/"+v)
						}
					}
				}
			}
		}
	}
	var table []string
	for _, v := range Verbs {
		table = append(table, v.Component+":"+v.Group+"/"+v.Resource+"/"+v.Verb)
		if v.Breaks == "" {
			t.Errorf("%+v says nothing of what breaks without it", v)
		}
	}
	slices.Sort(granted)
	slices.Sort(table)
	if !slices.Equal(granted, table) {
		t.Errorf("deploy/ grants\n%v\ndoctor checks\n%v", granted, table)
	}
}
