package charts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/config"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/serve"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/tools"
)

// settings are the K8S_SANDBOX_* variables the rendered server container gets: the ConfigMap's
// data and the container's literal env values.
func settings(t *testing.T, objs []unstructured.Unstructured) map[string]string {
	t.Helper()
	vars := map[string]string{}
	for _, cm := range ofKind(objs, "ConfigMap") {
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		for k, v := range data {
			vars[k] = v
		}
	}
	for _, e := range container(t, objs)["env"].([]any) {
		e := e.(map[string]any)
		if v, ok := e["value"].(string); ok {
			vars[e["name"].(string)] = v
		}
	}
	return vars
}

// container is the Deployment's server container.
func container(t *testing.T, objs []unstructured.Unstructured) map[string]any {
	t.Helper()
	d := ofKind(objs, "Deployment")
	if len(d) != 1 {
		t.Fatalf("%d Deployments", len(d))
	}
	cs, _, _ := unstructured.NestedSlice(d[0].Object, "spec", "template", "spec", "containers")
	return cs[0].(map[string]any)
}

func args(t *testing.T, objs []unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for _, a := range container(t, objs)["args"].([]any) {
		out = append(out, a.(string))
	}
	return out
}

// TestChartSettingsAreTheServers feeds the settings each set of values renders to the server's
// own parser (internal/config, the one owner of their rules): the chart never writes a setting
// the server refuses or does not know.
func TestChartSettingsAreTheServers(t *testing.T) {
	http := append(auth.Variables(), serve.Variables()...)
	for name, values := range map[string]map[string]any{
		"defaults":                {},
		"everything":              everything(),
		"sandboxd service, ports": {"connection": map[string]any{"sandboxd": map[string]any{"mode": "in-cluster-service", "restPort": 18080, "grpcPort": 19090}}},
		"in-cluster":              {"connection": map[string]any{"type": "in-cluster", "inCluster": map[string]any{"usePodIP": true}, "serverPort": 8889}},
		"direct":                  {"connection": map[string]any{"type": "direct", "direct": map[string]any{"apiURL": "http://sandbox-router.agent-sandbox-system.svc:8080"}}},
		"oidc": {"auth": map[string]any{"mode": "oidc", "oidc": map[string]any{"issuer": "https://issuer.example.com",
			"audience": "mcp", "jwksURL": "https://issuer.example.com/keys", "principalClaim": "email", "resourceURL": "https://mcp.example.com/mcp"}}},
		"large numbers": {"limits": map[string]any{"maxShutdownAfterSeconds": 86400, "maxSandboxesPerOwner": 100000}},
	} {
		t.Run(name, func(t *testing.T) {
			vars := settings(t, mustTemplate(t, values))
			cfg, err := config.Parse(vars)
			if err != nil {
				t.Fatalf("the server refuses the chart's settings: %v\n%v", err, vars)
			}
			if len(cfg.Unknown) > 0 {
				t.Errorf("settings the server does not know: %v", cfg.Unknown)
			}
			for k := range vars {
				if (strings.HasPrefix(k, config.Prefix+"AUTH__") || strings.HasPrefix(k, config.Prefix+"HTTP__")) && !slices.Contains(http, k) {
					t.Errorf("setting %s is not one the HTTP layer reads (%v)", k, http)
				}
			}
		})
	}
}

// TestSchemaRejectsWrongValues: a wrong value fails `helm template` (and so `helm install`)
// with a message naming it, instead of a pod that stops at start.
func TestSchemaRejectsWrongValues(t *testing.T) {
	for _, c := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"unknown connection type", map[string]any{"connection": map[string]any{"type": "tunnel"}}, "/connection/type"},
		{"sandboxd without mode", map[string]any{"connection": map[string]any{"sandboxd": map[string]any{"mode": nil}}}, "/connection/sandboxd"},
		{"direct without URL", map[string]any{"connection": map[string]any{"type": "direct"}}, "/connection/direct/apiURL"},
		{"gateway without name", map[string]any{"connection": map[string]any{"type": "gateway", "gateway": map[string]any{"name": ""}}}, "/connection/gateway/name"},
		{"port out of range", map[string]any{"connection": map[string]any{"sandboxd": map[string]any{"restPort": 70000}}}, "/connection/sandboxd/restPort"},
		{"same sandboxd ports", map[string]any{"connection": map[string]any{"sandboxd": map[string]any{"restPort": 9000, "grpcPort": 9000}}}, "restPort and grpcPort must differ"},
		{"no namespace", map[string]any{"namespaces": []string{}}, "/namespaces"},
		{"bad namespace", map[string]any{"namespaces": []string{"Team_A"}}, "/namespaces/0"},
		{"oidc without issuer", map[string]any{"auth": map[string]any{"mode": "oidc", "oidc": map[string]any{"audience": "mcp"}}}, "/auth/oidc/issuer"},
		{"unknown auth mode", map[string]any{"auth": map[string]any{"mode": "basic"}}, "/auth/mode"},
		{"short token", map[string]any{"auth": map[string]any{"tokens": map[string]any{"create": map[string]any{"alice": "short"}}}}, "/auth/tokens/create/alice"},
		{"unknown toolset", map[string]any{"tools": map[string]any{"toolsets": []string{"shell"}}}, "/tools/toolsets/0"},
		{"pinned namespace not served", map[string]any{"pins": map[string]any{"namespace": "other"}}, `pins.namespace "other" must be one of namespaces`},
		{"custom sandboxes without images", map[string]any{"customSandboxes": map[string]any{"enabled": true}}, "/customSandboxes/allowedImages"},
		{"metrics on the MCP port", map[string]any{"metrics": map[string]any{"enabled": true, "port": 8000}}, "/metrics/port"},
		{"service monitor without metrics", map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}}, "needs metrics.enabled"},
		{"setting not by name", map[string]any{"settings": map[string]any{"api_qps": "50"}}, "'api_qps' does not match pattern '^K8S_SANDBOX_"},
		{"setting not a string", map[string]any{"settings": map[string]any{"K8S_SANDBOX_API_QPS": 50}}, "/settings/K8S_SANDBOX_API_QPS"},
		{"misspelt value", map[string]any{"replica": 3}, "'replica' not allowed"},
		{"drain beyond the bound", map[string]any{"http": map[string]any{"drainSeconds": 301}}, "/http/drainSeconds"},
		{"min above max replicas", map[string]any{"autoscaling": map[string]any{"minReplicas": 7}}, "must not exceed maxReplicas"},
		{"bad digest", map[string]any{"image": map[string]any{"digest": "latest"}}, "/image/digest"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := template(t, c.values)
			if err == nil {
				t.Fatalf("helm template accepted %v", c.values)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("the error does not name %q: %v", c.want, err)
			}
		})
	}
}

// TestSchemaListsTheServersNames: the schema's toolsets and connection types are the server's.
func TestSchemaListsTheServersNames(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chart, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Tools struct {
				Properties struct {
					Toolsets struct {
						Items struct {
							Enum []string `json:"enum"`
						} `json:"items"`
					} `json:"toolsets"`
				} `json:"properties"`
			} `json:"tools"`
			Connection struct {
				Properties struct {
					Type struct {
						Enum []string `json:"enum"`
					} `json:"type"`
					Sandboxd struct {
						Properties struct {
							Mode struct {
								Enum []string `json:"enum"`
							} `json:"mode"`
						} `json:"properties"`
					} `json:"sandboxd"`
				} `json:"properties"`
			} `json:"connection"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what       string
		got, wants []string
	}{
		{"toolsets", schema.Properties.Tools.Properties.Toolsets.Items.Enum, tools.ToolsetNames()},
		{"connection types", schema.Properties.Connection.Properties.Type.Enum, []string{conn.TypeGateway, conn.TypeDirect, conn.TypeInCluster, conn.TypeSandboxdInCluster}},
		{"sandboxd modes", schema.Properties.Connection.Properties.Sandboxd.Properties.Mode.Enum, []string{conn.ModeService, conn.ModePodIP}},
	} {
		if !slices.Equal(slices.Sorted(slices.Values(c.got)), slices.Sorted(slices.Values(c.wants))) {
			t.Errorf("values.schema.json's %s %v, the server's %v", c.what, c.got, c.wants)
		}
	}
}

// TestREADMEListsEveryValue: the chart's README has a row for every value of values.yaml
// (free-form maps count as one value).
func TestREADMEListsEveryValue(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(chart, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	freeForm := []string{"resources", "autoscaling.behavior"}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			path := prefix + k
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 && !slices.Contains(freeForm, path) {
				walk(path+".", sub)
				continue
			}
			if !strings.Contains(string(readme), "`"+path+"`") {
				t.Errorf("the chart's README does not describe %s", path)
			}
		}
	}
	walk("", values)
}
