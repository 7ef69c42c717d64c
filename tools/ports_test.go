package tools

import (
	"context"
	"strings"
	"testing"
)

type fakePorts struct{ exposed map[string]string }

func (f *fakePorts) Expose(_ context.Context, owner, ns, claim string, port int) (string, error) {
	u := "http://server/ports/t-" + claim + "/"
	f.exposed[ns+"/"+claim] = u
	return u, nil
}

func (f *fakePorts) Unexpose(_ context.Context, owner, ns, claim string, port int) (bool, error) {
	_, ok := f.exposed[ns+"/"+claim]
	delete(f.exposed, ns+"/"+claim)
	return ok, nil
}

func (f *fakePorts) Forget(ns, claim string) { delete(f.exposed, ns+"/"+claim) }

func TestPortTools(t *testing.T) {
	p := &fakePorts{exposed: map[string]string{}}
	h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.Ports = p })
	h.claims.add("ns1", "mine", testOwner)
	args := map[string]any{"sandbox_claim_name": "mine", "namespace": "ns1", "port": 8000}
	res := h.call(t, "expose_port", args)
	var er ExposeResult
	decode(t, res.StructuredContent, &er)
	if res.IsError || er.URL != "http://server/ports/t-mine/" || er.Port != 8000 {
		t.Fatalf("expose_port: %s %+v", text(res), er)
	}
	for _, bad := range []any{0, 65536} {
		if res := h.call(t, "expose_port", map[string]any{"sandbox_claim_name": "mine", "port": bad}); !res.IsError || !strings.Contains(text(res), "port must be between 1 and 65535") {
			t.Errorf("port %v: %s", bad, text(res))
		}
	}
	res = h.call(t, "unexpose_port", map[string]any{"sandbox_claim_name": "mine", "namespace": "ns1"})
	var ur UnexposeResult
	decode(t, res.StructuredContent, &ur)
	if res.IsError || !ur.Unexposed {
		t.Errorf("unexpose_port: %s", text(res))
	}
	h.call(t, "expose_port", args)
	if res := h.call(t, "delete_sandbox", map[string]any{"sandbox_claim_name": "mine", "namespace": "ns1"}); res.IsError {
		t.Fatal(text(res))
	}
	if len(p.exposed) != 0 {
		t.Errorf("delete_sandbox left exposures: %v", p.exposed)
	}

	plain := newHarness(t)
	plain.claims.add("ns1", "mine", testOwner)
	if res := plain.call(t, "expose_port", args); !res.IsError || !strings.Contains(text(res), "cannot expose ports") {
		t.Errorf("without a registry: %s", text(res))
	}
}

func TestAuditEvents(t *testing.T) {
	h := newHarness(t)
	res := h.call(t, "create_sandbox", map[string]any{"warmpool": "p", "namespace": "ns1"})
	var cr CreateResult
	decode(t, res.StructuredContent, &cr)
	args := map[string]any{"sandbox_claim_name": cr.SandboxClaimName, "namespace": "ns1"}
	h.call(t, "execute_command", map[string]any{"sandbox_claim_name": cr.SandboxClaimName, "namespace": "ns1", "command": "true"})
	h.call(t, "list_files", map[string]any{"sandbox_claim_name": cr.SandboxClaimName, "namespace": "ns1", "path": "."}) // not audited
	h.call(t, "execute_command", map[string]any{"sandbox_claim_name": "nope", "namespace": "ns1", "command": "true"})
	h.call(t, "delete_sandbox", args)
	want := []string{
		"ns1/" + cr.SandboxClaimName + " " + testOwner + " create_sandbox ok",
		"ns1/" + cr.SandboxClaimName + " " + testOwner + " execute_command ok",
		"ns1/nope " + testOwner + " execute_command tool_error",
		"ns1/" + cr.SandboxClaimName + " " + testOwner + " delete_sandbox ok",
	}
	if strings.Join(h.claims.audits, "\n") != strings.Join(want, "\n") {
		t.Errorf("audits:\n%s\nwant:\n%s", strings.Join(h.claims.audits, "\n"), strings.Join(want, "\n"))
	}
}
