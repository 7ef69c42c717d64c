package tools

import (
	"strings"
	"testing"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

func TestCatalogAndPoolHint(t *testing.T) {
	h := newHarness(t)
	h.claims.pools = map[string][]kube.Pool{"ns1": {{Name: "python-pool", Template: "python", Images: []string{"py:1"}, Ready: 2, Replicas: 3, EnvPolicy: "Allowed", VolumePolicy: "Overrides"}}}
	res := h.call(t, "list_sandbox_templates", map[string]any{"namespace": "ns1"})
	if res.IsError {
		t.Fatalf("list_sandbox_templates: %s", text(res))
	}
	var got CatalogResult
	decode(t, res.StructuredContent, &got)
	if len(got.Namespaces) != 1 || len(got.Namespaces[0].Pools) != 1 {
		t.Fatalf("catalog: %+v", got)
	}
	if p := got.Namespaces[0].Pools[0]; p.Name != "python-pool" || p.Template != "python" || len(p.Images) != 1 || p.Ready != 2 ||
		p.Replicas != 3 || p.EnvOverrides != "Allowed" || p.Volumes != "Overrides" {
		t.Fatalf("pool: %+v", p)
	}
	if res := h.call(t, "list_sandbox_templates", map[string]any{"namespace": "*"}); !res.IsError || !strings.Contains(text(res), "K8S_SANDBOX_ALLOWED_NAMESPACES") {
		t.Errorf("\"*\" without an allowlist: %s", text(res))
	}
	h.claims.err = &kube.ClaimFailure{Claim: "c", Reason: "WarmPoolNotFound", Message: `SandboxWarmPool "nope" not found`}
	res = h.call(t, "create_sandbox", map[string]any{"warmpool": "nope", "namespace": "ns1"})
	if !res.IsError || !strings.Contains(text(res), `Warm pools in namespace "ns1": python-pool (2 ready).`) {
		t.Errorf("warm pool not found: %s", text(res))
	}
}

func TestCreateEnv(t *testing.T) {
	h := newHarness(t)
	res := h.call(t, "create_sandbox", map[string]any{"warmpool": "p", "env": map[string]any{"PYTHONPATH": "/workspace"}})
	if res.IsError {
		t.Fatal(text(res))
	}
	if got := h.claims.created[0].Env; len(got) != 1 || got["PYTHONPATH"] != "/workspace" {
		t.Errorf("env passed to the claim: %v", got)
	}
	for _, f := range []*kube.ClaimFailure{
		{Claim: "c", Reason: "EnvVarsInjectionRejected", Message: "environment variable injection rejected: environment variable injection is not allowed by the template policy"},
		{Claim: "c", Reason: "ReconcilerError", Message: `Error seen: environment variable override is not allowed by the template policy for variable "HOME"`},
	} {
		h.claims.err = f
		res = h.call(t, "create_sandbox", map[string]any{"warmpool": "p", "env": map[string]any{"HOME": "/x"}})
		if !res.IsError || !strings.Contains(text(res), "Leave env out and pass env to execute_command or start_process instead") {
			t.Errorf("%s: %s", f.Reason, text(res))
		}
	}
}
