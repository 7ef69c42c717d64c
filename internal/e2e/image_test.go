//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ociBlob reads the JSON blob of digest ("sha256:...") in the OCI layout dir into v.
func ociBlob(t *testing.T, dir, digest string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "blobs", strings.Replace(digest, ":", string(filepath.Separator), 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("blob %s: %v", digest, err)
	}
}

type ociIndex struct {
	Manifests []struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Platform  *struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
		} `json:"platform"`
	} `json:"manifests"`
}

// TestServerImageIsReproducible builds the server's image twice with hack/image.sh (ko, the
// recipe the stack's server pod and a release use) from this checkout: the same index digest
// both times; an image for linux/amd64 and linux/arm64, each running the static binary ko put
// in /ko-app as the base's nonroot user; and ko's SPDX SBOM for each.
func TestServerImageIsReproducible(t *testing.T) {
	t.Parallel()
	var digests []string
	var out string
	for i := range 2 {
		out = t.TempDir()
		cmd := exec.Command(filepath.Join(stack.RepoRoot, "hack", "image.sh"), out)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		if err != nil {
			t.Fatalf("hack/image.sh (build %d): %v\n%s", i+1, err, stderr.String())
		}
		f := strings.Fields(string(stdout))
		if len(f) != 2 || !strings.HasPrefix(f[1], "sha256:") {
			t.Fatalf("hack/image.sh printed %q, want \"<name> <digest>\"", stdout)
		}
		digests = append(digests, f[1])
		t.Logf("build %d: %s %s", i+1, f[0], f[1])
	}
	if digests[0] != digests[1] {
		t.Fatalf("two builds of the same checkout: index %s, then %s", digests[0], digests[1])
	}

	layout := filepath.Join(out, "layout")
	var top, idx ociIndex
	ociBlob(t, layout, digests[1], &idx)
	data, err := os.ReadFile(filepath.Join(layout, "index.json"))
	if err != nil || json.Unmarshal(data, &top) != nil || len(top.Manifests) != 1 || top.Manifests[0].Digest != digests[1] {
		t.Fatalf("the layout's index.json does not hold the index %s alone: %s %v", digests[1], data, err)
	}
	var platforms []string
	for _, m := range idx.Manifests {
		if m.Platform == nil {
			t.Fatalf("index entry %s has no platform", m.Digest)
		}
		platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
		var manifest struct {
			Config struct{ Digest string }   `json:"config"`
			Layers []struct{ Digest string } `json:"layers"`
		}
		ociBlob(t, layout, m.Digest, &manifest)
		var cfg struct {
			Architecture string `json:"architecture"`
			Config       struct {
				User       string
				Entrypoint []string
			} `json:"config"`
		}
		ociBlob(t, layout, manifest.Config.Digest, &cfg)
		if cfg.Architecture != m.Platform.Architecture || cfg.Config.User != "65532:65532" ||
			!slices.Equal(cfg.Config.Entrypoint, []string{"/ko-app/k8s-sandbox-mcp"}) {
			t.Errorf("%s: architecture %q, user %q, entrypoint %q; want %s, 65532:65532 (nonroot), [/ko-app/k8s-sandbox-mcp]",
				m.Digest, cfg.Architecture, cfg.Config.User, cfg.Config.Entrypoint, m.Platform.Architecture)
		}
		if len(manifest.Layers) == 0 {
			t.Fatalf("%s: an image without layers", m.Digest)
		}
		staticBinary(t, layout, manifest.Layers[len(manifest.Layers)-1].Digest, m.Platform.Architecture)
		sbom, err := os.ReadFile(filepath.Join(out, "sbom", "k8s-sandbox-mcp-"+m.Platform.OS+"-"+m.Platform.Architecture+".spdx.json"))
		if err != nil || !strings.Contains(string(sbom), "SPDX") || !strings.Contains(string(sbom), "github.com/k8s-sandbox-mcp/k8s-sandbox-mcp") {
			t.Errorf("no SPDX SBOM of the %s image naming the module: %v", m.Platform.Architecture, err)
		}
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("the index holds %v, want linux/amd64 and linux/arm64", platforms)
	}
}

// staticBinary checks that the layer holds ko-app/k8s-sandbox-mcp, a static ELF binary (no
// program interpreter, no dynamic section) for arch.
func staticBinary(t *testing.T, layout, layer, arch string) {
	t.Helper()
	f, err := os.Open(filepath.Join(layout, "blobs", strings.Replace(layer, ":", string(filepath.Separator), 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("layer %s: %v", layer, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("layer %s has no ko-app/k8s-sandbox-mcp: %v", layer, err)
		}
		if strings.TrimPrefix(h.Name, "/") != "ko-app/k8s-sandbox-mcp" {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		bin, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s binary: %v", arch, err)
		}
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
		if bin.Machine != want {
			t.Errorf("the %s image's binary is for %v", arch, bin.Machine)
		}
		for _, p := range bin.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("the %s image's binary has a %s program header: it is dynamically linked", arch, p.Type)
			}
		}
		return
	}
}
