package localstack_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
	"sigs.k8s.io/yaml"
)

// exampleImages reads the images of every container (init containers too) of the
// SandboxTemplates in deploy/examples/<file>, failing on one whose pull policy is not
// IfNotPresent: a side-loaded image (kind load, the local stack's import) must be used as it
// is, never pulled.
func exampleImages(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "deploy", "examples", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var images []string
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := r.Read()
		if err != nil {
			break
		}
		var tpl extv1beta1.SandboxTemplate
		if err := yaml.Unmarshal(doc, &tpl); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if tpl.Kind != "SandboxTemplate" {
			continue
		}
		spec := tpl.Spec.PodTemplate.Spec
		for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
			if c.ImagePullPolicy != corev1.PullIfNotPresent {
				t.Errorf("%s: template %s container %s: imagePullPolicy %q, want IfNotPresent", file, tpl.Name, c.Name, c.ImagePullPolicy)
			}
			if !slices.Contains(images, c.Image) {
				images = append(images, c.Image)
			}
		}
	}
	if len(images) == 0 {
		t.Fatalf("%s: no image in its templates", file)
	}
	return images
}

// imagesScript reads hack/localstack/images.sh's NAME_IMAGE=value lines.
func imagesScript(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("images.sh")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^([A-Z_]+_IMAGE)=(\S+)$`)
	m := map[string]string{}
	for _, l := range line.FindAllStringSubmatch(string(data), -1) {
		m[l[1]] = l[2]
	}
	return m
}

// TestExamplesNamePublishedImages: the example templates a user applies name the images
// agent-sandbox publishes for the release they are written for (registry.k8s.io), or, for the
// images nothing publishes, the name deploy/README.md tells the user to build them under;
// never an image of this machine only (localhost/...), but for the v0.5 forwarder, which is
// this project's and is published nowhere. And the local stack's images.sh names its builds
// exactly so, for each agent-sandbox version, so that the stack runs the files users apply.
func TestExamplesNamePublishedImages(t *testing.T) {
	v := versions(t)
	script := imagesScript(t)
	for _, tc := range []struct {
		file, version string
		own           []string // images of this project, not agent-sandbox's
	}{
		{"sandbox-pools.yaml", v["AGENT_SANDBOX_DEFAULT_VERSION"], nil},
		{"sandbox-pools-v0.5.yaml", v["AGENT_SANDBOX_COMPAT_VERSION"], []string{script["FORWARD_IMAGE"]}},
	} {
		published := "registry.k8s.io/agent-sandbox/python-runtime-sandbox:" + tc.version
		built := "kind.local/sandboxd:" + tc.version
		want := append([]string{built, published}, tc.own...)
		got := exampleImages(t, tc.file)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s names images %v, want %v (agent-sandbox %s)", tc.file, got, want, tc.version)
		}
		for _, img := range got {
			if strings.HasPrefix(img, "localhost/") && !slices.Contains(tc.own, img) {
				t.Errorf("%s names %s, an image no registry holds", tc.file, img)
			}
		}
		for name, img := range map[string]string{"SANDBOXD_IMAGE": built, "PYTHON_IMAGE": published} {
			if s := strings.ReplaceAll(script[name], "$AGENT_SANDBOX_VERSION", tc.version); s != img {
				t.Errorf("images.sh names %s %q for agent-sandbox %s; %s names %q", name, s, tc.version, tc.file, img)
			}
		}
	}
}
