package release

import (
	"archive/zip"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testTag is what the script test releases: a prerelease no real release will use.
const testTag = "v0.0.1-releasetest.1"

// TestReleaseScript runs hack/release.sh as a release would (for this machine's platform only:
// RELEASE_PLATFORMS=host, since cross-compiling every platform costs minutes of CPU), then
// checks what it made as its consumers do: SHA256SUMS, the registry entry (schema, version,
// the bundle's URL and sha256), and the .mcpb, unpacked and started from its manifest's
// command the way Claude Desktop starts it, through an MCP client's tools/list. The kubeconfig
// points at a closed port: the server starts and lists its tools without the API.
func TestReleaseScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the server and packs a bundle")
	}
	if runtime.GOOS == "windows" {
		t.Skip("hack/release.sh is a bash script")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	mcpbBin, err := MCPBBin(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(mcpbBin, "mcpb")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("@anthropic-ai/mcpb is not installed (hack/deps.sh installs it): %v", err)
		}
		t.Skipf("@anthropic-ai/mcpb is not installed; run hack/deps.sh (%v)", err)
	}
	out := filepath.Join(t.TempDir(), "dist")
	// The image is another recipe's to test (TestServerImageIsReproducible), and costs minutes;
	// the chart is packaged with the helm hack/deps.sh installs.
	if err := RunScript(ctx, root, testTag, out, "RELEASE_PLATFORMS=host", "RELEASE_SKIP=image"); err != nil {
		t.Fatal(err)
	}
	version := strings.TrimPrefix(testTag, "v")
	bundle := filepath.Join(out, "k8s-sandbox-mcp-"+version+".mcpb")
	checkSums(t, out, "k8s-sandbox-mcp-"+version+"-"+runtime.GOOS+"-"+runtime.GOARCH, filepath.Base(bundle), "server.json",
		"k8s-sandbox-mcp-"+version+".tgz")

	// The registry entry: valid, at the tag's version, naming the bundle by its release URL and hash.
	raw, err := os.ReadFile(filepath.Join(out, "server.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := validateServerJSON(t, registrySchema(t), raw); err != nil {
		t.Fatalf("dist/server.json: %v", err)
	}
	var entry struct {
		Version  string `json:"version"`
		Packages []struct {
			Identifier string `json:"identifier"`
			Version    string `json:"version"`
			FileSha256 string `json:"fileSha256"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(raw, &entry); err != nil {
		t.Fatal(err)
	}
	p := entry.Packages[0]
	if entry.Version != version || p.Version != version || p.FileSha256 != fileSHA256(t, bundle) ||
		!strings.HasSuffix(p.Identifier, "/releases/download/"+testTag+"/"+filepath.Base(bundle)) {
		t.Errorf("server.json: version %q, package %q %q sha256 %q; want %s, the bundle's URL and sha256 %s",
			entry.Version, p.Identifier, p.Version, p.FileSha256, version, fileSHA256(t, bundle))
	}

	// The bundle, installed and started as the host does.
	dir := filepath.Join(t.TempDir(), "k8s-sandbox-mcp")
	if err := Unpack(bundle, dir); err != nil {
		t.Fatal(err)
	}
	m, err := ReadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != version {
		t.Errorf("manifest version %q, want %q", m.Version, version)
	}
	home := t.TempDir() // no ~/.kube/config of the machine's is read
	kubeconfig := filepath.Join(home, "cluster.yaml")
	if err := os.WriteFile(kubeconfig, []byte(deadKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	user, err := UserConfigFor(m, map[string]string{
		"K8S_SANDBOX_CONNECTION__TYPE":    "direct",
		"K8S_SANDBOX_CONNECTION__API_URL": "http://127.0.0.1:1",
	})
	if err != nil {
		t.Fatal(err)
	}
	user["kubeconfig"], user["namespace"] = kubeconfig, "release-test"
	c, err := Resolve(m, dir, NodePlatform(runtime.GOOS), user)
	if err != nil {
		t.Fatal(err)
	}
	// Claude Desktop starts servers with a small environment of its own.
	server := c.Cmd("PATH=/usr/bin:/bin", "HOME="+home)
	server.Stderr = &testLog{t: t}
	client := mcp.NewClient(&mcp.Implementation{Name: "release-test", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: server}, nil)
	if err != nil {
		t.Fatalf("starting %s %q: %v", c.Command, c.Args, err)
	}
	defer session.Close()
	if got := session.InitializeResult().ServerInfo.Version; got != testTag {
		t.Errorf("serverInfo.version %q, want the tag %s", got, testTag)
	}
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
	}
	for _, want := range []string{"create_sandbox", "execute_command", "delete_sandbox"} {
		if !names[want] {
			t.Errorf("tools/list has no %s (%d tools)", want, len(tools.Tools))
		}
	}
}

// deadKubeconfig names an API server on a closed loopback port.
const deadKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: dead
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: dead
  context: {cluster: dead, user: dead}
current-context: dead
users:
- name: dead
  user: {token: unused}
`

// checkSums checks SHA256SUMS lists exactly the files wanted (and what else the release made
// beside them: chart packages), each with its hash.
func checkSums(t *testing.T, out string, want ...string) {
	t.Helper()
	f, err := os.Open(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		if got := fileSHA256(t, filepath.Join(out, name)); got != sum {
			t.Errorf("SHA256SUMS: %s %s, the file's is %s", name, sum, got)
		}
		listed[name] = true
	}
	for _, w := range want {
		if !listed[w] {
			t.Errorf("SHA256SUMS does not list %s (it lists %v)", w, listed)
		}
	}
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		if e.Name() != "SHA256SUMS" && !listed[e.Name()] {
			t.Errorf("%s is not in SHA256SUMS", e.Name())
		}
	}
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func writeZip(t *testing.T, path string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// testLog sends the server's stderr to the test's log.
type testLog struct{ t *testing.T }

func (l *testLog) Write(p []byte) (int, error) {
	l.t.Logf("server: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// A tag that is not one semantic version, or an OUT holding other files (the script empties
// it), stops the script before it builds anything.
func TestReleaseScriptRefuses(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("hack/release.sh is a bash script")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "keep"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tag, out, want string }{
		{"1.2.3", t.TempDir(), "TAG must look like v1.2.3"},
		{"v1.2", t.TempDir(), "TAG must look like v1.2.3"},
		{"v1.2.3 ", t.TempDir(), "TAG must look like v1.2.3"},
		{"v01.2.3", t.TempDir(), "TAG must look like v1.2.3"},
		{"v1.2.3", full, "is not empty"},
	} {
		err := RunScript(context.Background(), root, c.tag, c.out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q into %s: %v, want %q", c.tag, c.out, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(full, "keep")); err != nil {
		t.Errorf("the refused OUT was touched: %v", err)
	}
}
