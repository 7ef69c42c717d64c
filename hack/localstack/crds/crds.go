package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// servedVersion is the only CRD version the stack serves: the upstream CRDs convert between
// v1alpha1 and v1beta1 with the controller's webhook, which this stack does not run.
const servedVersion = "v1beta1"

// writePatchedCRDs writes every CRD of dir/*.yaml to w as one YAML stream, keeping only
// servedVersion and setting spec.conversion to {strategy: None}.
func writePatchedCRDs(w io.Writer, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return fmt.Errorf("list CRDs: %w", err)
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRD YAML in %s", dir)
	}
	sort.Strings(files)
	for _, f := range files {
		docs, err := readCRDs(f)
		if err != nil {
			return err
		}
		for _, d := range docs {
			if err := patchCRD(d); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			out, err := yaml.Marshal(d)
			if err != nil {
				return fmt.Errorf("%s: encode: %w", f, err)
			}
			if _, err := fmt.Fprintf(w, "---\n%s", out); err != nil {
				return fmt.Errorf("write: %w", err)
			}
		}
	}
	return nil
}

func readCRDs(path string) ([]map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open CRD: %w", err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 64*1024)
	var docs []map[string]any
	for {
		var d map[string]any
		if err := dec.Decode(&d); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
}

// patchCRD keeps only servedVersion (served and stored) and disables conversion.
func patchCRD(d map[string]any) error {
	if d["kind"] != "CustomResourceDefinition" {
		return fmt.Errorf("not a CustomResourceDefinition: %v", d["kind"])
	}
	spec, ok := d["spec"].(map[string]any)
	if !ok {
		return errors.New("CRD without spec")
	}
	versions, _ := spec["versions"].([]any)
	var kept []any
	for _, v := range versions {
		vm, ok := v.(map[string]any)
		if ok && vm["name"] == servedVersion {
			vm["served"] = true
			vm["storage"] = true
			kept = append(kept, vm)
		}
	}
	if len(kept) != 1 {
		return fmt.Errorf("CRD has no version %s", servedVersion)
	}
	spec["versions"] = kept
	spec["conversion"] = map[string]any{"strategy": "None"}
	return nil
}
