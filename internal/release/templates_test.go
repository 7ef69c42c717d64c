package release

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
)

// The registry's server.json schema, vendored because tests do not use the network: a
// byte-for-byte copy of https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json,
// taken on 2026-12-07 from the registry's internal/validators/schemas/2025-12-11.json (released
// by modelcontextprotocol/registry#841, 2025-12-12). Moving to a newer schema is a deliberate
// change: replace the file, its $schema in deploy/release/server.json and this pin together.
const (
	registrySchemaFile   = "testdata/server.schema.2025-12-11.json"
	registrySchemaURL    = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
	registrySchemaSHA256 = "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0"
)

const (
	manifestTemplate   = "../../deploy/release/manifest.json"
	serverJSONTemplate = "../../deploy/release/server.json"
	placeholderVersion = "0.0.0-dev" // what hack/release.sh replaces with the tag's version
)

// registrySchema compiles the vendored schema, after checking it is the pinned file.
func registrySchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	raw, err := os.ReadFile(registrySchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != registrySchemaSHA256 {
		t.Fatalf("%s changed (sha256 %x, pinned %s): replace it and the pin together", registrySchemaFile, sum, registrySchemaSHA256)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat() // "uri" fields are checked as the registry checks them
	if err := c.AddResource(registrySchemaURL, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(registrySchemaURL)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validateServerJSON(t *testing.T, s *jsonschema.Schema, raw []byte) error {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(doc)
}

func TestServerJSONTemplateMatchesRegistrySchema(t *testing.T) {
	s := registrySchema(t)
	raw, err := os.ReadFile(serverJSONTemplate)
	if err != nil {
		t.Fatal(err)
	}
	if err := validateServerJSON(t, s, raw); err != nil {
		t.Fatalf("deploy/release/server.json does not match the registry's schema: %v", err)
	}
	var doc struct {
		Schema string `json:"$schema"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || doc.Schema != registrySchemaURL {
		t.Fatalf("$schema is %q (%v), want the vendored schema's %s", doc.Schema, err, registrySchemaURL)
	}
}

// The validator is live: documents the registry refuses are refused here too.
func TestRegistrySchemaRefusesBadEntries(t *testing.T) {
	s := registrySchema(t)
	raw, err := os.ReadFile(serverJSONTemplate)
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(map[string]any){
		"name without namespace":    func(d map[string]any) { d["name"] = "k8s-sandbox-mcp" },
		"description over 100":      func(d map[string]any) { d["description"] = strings.Repeat("x", 101) },
		"no version":                func(d map[string]any) { delete(d, "version") },
		"mcpb sha256 not hex":       func(d map[string]any) { pkg(d)["fileSha256"] = "not-a-hash" },
		"package version latest":    func(d map[string]any) { pkg(d)["version"] = "latest" },
		"package without transport": func(d map[string]any) { delete(pkg(d), "transport") },
	} {
		t.Run(name, func(t *testing.T) {
			var d map[string]any
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatal(err)
			}
			edit(d)
			b, _ := json.Marshal(d)
			if validateServerJSON(t, s, b) == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func pkg(d map[string]any) map[string]any { return d["packages"].([]any)[0].(map[string]any) }

// The registry entry offers the connection types the server has, no more, no fewer.
func TestServerJSONConnectionChoices(t *testing.T) {
	raw, err := os.ReadFile(serverJSONTemplate)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Packages []struct {
			EnvironmentVariables []struct {
				Name    string   `json:"name"`
				Choices []string `json:"choices"`
			} `json:"environmentVariables"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	want := []string{conn.TypeGateway, conn.TypeDirect, conn.TypeInCluster, conn.TypeSandboxdInCluster}
	for _, e := range d.Packages[0].EnvironmentVariables {
		if e.Name == "K8S_SANDBOX_CONNECTION__TYPE" {
			if !slices.Equal(e.Choices, want) {
				t.Fatalf("choices %v, want %v", e.Choices, want)
			}
			return
		}
	}
	t.Fatal("no K8S_SANDBOX_CONNECTION__TYPE")
}

var userConfigVar = regexp.MustCompile(`\$\{user_config\.([^}]+)\}`)

// The manifest asks for each connection setting of README's settings table (the table
// internal/config's readme_test checks against the code), and Claude Desktop, resolving it
// with the user's choices left at their defaults, passes the server no ${...} it did not
// substitute: a setting without a default, or a lone "${user_config.x}" argument whose value
// is empty, reaches the server verbatim (the host's rules, see Resolve).
func TestManifestTemplate(t *testing.T) {
	m, err := ReadManifest(manifestTemplate)
	if err != nil {
		t.Fatal(err)
	}
	if m.ManifestVersion != "0.3" || m.Server.Type != "binary" || m.Version != placeholderVersion {
		t.Fatalf("manifest_version %q, server.type %q, version %q", m.ManifestVersion, m.Server.Type, m.Version)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range regexp.MustCompile("(?m)^\\| `(K8S_SANDBOX_CONNECTION__[A-Z_]+)` \\|").FindAllStringSubmatch(string(readme), -1) {
		want = append(want, s[1])
	}
	var got []string
	for k := range m.Server.MCPConfig.Env {
		got = append(got, k)
	}
	sort.Strings(want)
	sort.Strings(got)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("manifest env %v, want README's connection settings %v", got, want)
	}
	used := map[string]bool{}
	all := append(append([]string{m.Server.MCPConfig.Command}, m.Server.MCPConfig.Args...), got...)
	for _, v := range m.Server.MCPConfig.Env {
		all = append(all, v)
	}
	for _, s := range all {
		for _, v := range userConfigVar.FindAllStringSubmatch(s, -1) {
			used[v[1]] = true
			if _, ok := m.UserConfig[v[1]]; !ok {
				t.Errorf("%s uses user_config.%s, which the manifest does not declare", s, v[1])
			}
		}
	}
	for k := range m.UserConfig {
		if !used[k] {
			t.Errorf("user_config.%s is asked for and never used", k)
		}
	}
	for _, p := range []string{"darwin", "linux", "win32"} {
		c, err := Resolve(m, "/opt/bundle", p, map[string]any{"connection_type": conn.TypeGateway})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range append(append([]string{c.Command}, c.Args...), mapValues(c.Env)...) {
			if strings.Contains(s, "${") {
				t.Errorf("%s: the host passes %q to the server", p, s)
			}
		}
		if wantCmd := "/opt/bundle/server/k8s-sandbox-mcp"; p != "win32" && c.Command != wantCmd || p == "win32" && c.Command != "/opt/bundle/server/windows-amd64/k8s-sandbox-mcp.exe" {
			t.Errorf("%s: command %q", p, c.Command)
		}
	}
	if _, err := Resolve(m, "/opt/bundle", "darwin", nil); err == nil {
		t.Error("no connection type: the host would start the server")
	}
}

func mapValues(m map[string]string) []string {
	var v []string
	for _, s := range m {
		v = append(v, s)
	}
	return v
}

// Resolve follows the host's rules, quirks included (they are why the manifest is written the
// way it is).
func TestResolveFollowsTheHost(t *testing.T) {
	m := Manifest{
		Server: Server{MCPConfig: MCPConfig{
			Command: "${__dirname}/server/x",
			Args:    []string{"${user_config.a}", "--b=${user_config.b}", "${user_config.c}", "${user_config.d}"},
			Env:     map[string]string{"A": "${user_config.a}", "B": "${user_config.b}", "C": "${user_config.c}", "N": "${user_config.n}"},
			PlatformOverrides: map[string]MCPConfig{
				"win32": {Command: "${__dirname}/server/x.exe"},
			},
		}},
		UserConfig: map[string]UserOption{
			"a": {Type: "string", Default: ""},
			"b": {Type: "string", Default: ""},
			"c": {Type: "boolean", Default: false},
			"d": {Type: "string"}, // no default: never substituted
			"n": {Type: "number", Default: 7.0},
		},
	}
	c, err := Resolve(m, "/b", "darwin", map[string]any{"c": true})
	if err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{"${user_config.a}", "--b=", "true", "${user_config.d}"}
	if c.Command != "/b/server/x" || !slices.Equal(c.Args, wantArgs) {
		t.Errorf("got %q %q, want /b/server/x %q", c.Command, c.Args, wantArgs)
	}
	if c.Env["A"] != "" || c.Env["B"] != "" || c.Env["C"] != "true" || c.Env["N"] != "7" {
		t.Errorf("env %v", c.Env)
	}
	if c, _ := Resolve(m, "/b", "win32", nil); c.Command != "/b/server/x.exe" || len(c.Args) != 4 {
		t.Errorf("win32: %q %q", c.Command, c.Args)
	}
	m.UserConfig["r"] = UserOption{Type: "string", Required: true, Default: "x"}
	if _, err := Resolve(m, "/b", "linux", nil); err == nil {
		t.Error("a required setting the user left alone: the host does not start the server")
	}
}

func TestUnpackRefusesEscapes(t *testing.T) {
	dir := t.TempDir()
	bundle := filepath.Join(dir, "evil.mcpb")
	writeZip(t, bundle, map[string]string{"manifest.json": "{}", "../escape": "x"})
	if err := Unpack(bundle, filepath.Join(dir, "out")); err == nil || !strings.Contains(err.Error(), "leaves the directory") {
		t.Fatalf("err = %v", err)
	}
}
