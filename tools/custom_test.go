package tools

import (
	"strings"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

func TestCreateToOrder(t *testing.T) {
	policy := kube.CustomPolicy{AllowedImages: []string{"registry.example/py:3.12", "registry.example/team/*"}, MaxCPUMillis: 2000, MaxMemoryMiB: 1024}
	tests := []struct {
		name    string
		policy  kube.CustomPolicy
		args    map[string]any
		want    kube.CustomSpec // the derived pool's request; zero: none made
		wantErr string
	}{
		{name: "warm pool as it is", policy: policy, args: map[string]any{"warmpool": "p"}},
		{name: "exact image", policy: policy, args: map[string]any{"warmpool": "p", "image": "registry.example/py:3.12"},
			want: kube.CustomSpec{BasePool: "p", Image: "registry.example/py:3.12"}},
		{name: "prefix image and limits", policy: policy, args: map[string]any{"warmpool": "p", "image": "registry.example/team/a:1", "cpus": 0.5, "memory": 768},
			want: kube.CustomSpec{BasePool: "p", Image: "registry.example/team/a:1", CPUMillis: 500, MemoryMiB: 768}},
		{name: "limits only", policy: policy, args: map[string]any{"warmpool": "p", "cpus": 2},
			want: kube.CustomSpec{BasePool: "p", CPUMillis: 2000}},
		{name: "off", args: map[string]any{"warmpool": "p", "memory": 128}, wantErr: "does not build sandboxes to order"},
		{name: "image not allowed", policy: policy, args: map[string]any{"warmpool": "p", "image": "registry.example/py:3.13"},
			wantErr: `image "registry.example/py:3.13" is not allowed on this server; allowed: registry.example/py:3.12, registry.example/team/*`},
		{name: "cpus over the cap", policy: policy, args: map[string]any{"warmpool": "p", "cpus": 2.5}, wantErr: "cpus"},
		{name: "memory over the cap", policy: policy, args: map[string]any{"warmpool": "p", "memory": 1025}, wantErr: "memory"},
		{name: "memory under the floor", policy: policy, args: map[string]any{"warmpool": "p", "memory": 63}, wantErr: "memory"},
		{name: "cpus zero", policy: policy, args: map[string]any{"warmpool": "p", "cpus": 0}, wantErr: "cpus"},
		{name: "base pool missing", policy: policy, args: map[string]any{"warmpool": "missing", "cpus": 1},
			wantErr: "list_sandbox_templates shows them"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.Custom = tt.policy })
			h.claims.collected = make(chan string, 1)
			res := h.call(t, "create_sandbox", tt.args)
			if tt.wantErr != "" {
				if !res.IsError || !strings.Contains(text(res), tt.wantErr) {
					t.Fatalf("want an error with %q, got %s", tt.wantErr, text(res))
				}
				if len(h.claims.created) != 0 {
					t.Errorf("a claim was made: %+v", h.claims.created)
				}
				return
			}
			if res.IsError {
				t.Fatal(text(res))
			}
			var cr CreateResult
			decode(t, res.StructuredContent, &cr)
			if tt.want == (kube.CustomSpec{}) {
				if len(h.claims.custom) != 0 || cr.CustomPool != "" || h.claims.created[0].WarmPool != "p" {
					t.Errorf("a plain create derived a pool: %+v %+v", h.claims.custom, cr)
				}
				return
			}
			if len(h.claims.custom) != 1 || h.claims.custom[0] != tt.want {
				t.Errorf("derived pool request %+v, want %+v", h.claims.custom, tt.want)
			}
			if cr.CustomPool != "mcp-custom-0123456789abcdef" || h.claims.created[0].WarmPool != cr.CustomPool {
				t.Errorf("claim on %q, result %+v", h.claims.created[0].WarmPool, cr)
			}
			select {
			case ns := <-h.claims.collected:
				if ns != "default" {
					t.Errorf("collected namespace %q", ns)
				}
			case <-time.After(5 * time.Second):
				t.Error("unused custom pools were not collected after a custom create")
			}
		})
	}
}

func TestCreateVolume(t *testing.T) {
	tests := []struct {
		size, want, wantErr string
	}{
		{size: "2Gi", want: "2Gi"},
		{size: "500Mi", want: "500Mi"},
		{size: "10Gi", want: "10Gi"},
		{size: "11Gi", wantErr: "volume_size 11Gi is more than this server allows (10Gi); ask for less"},
		{size: "0", wantErr: `volume_size "0" is not a positive Kubernetes quantity`},
		{size: "two gigs", wantErr: "volume_size"},
		{size: "1e-3", wantErr: "volume_size 1e-3 is less than the smallest volume this server creates (1Mi)"},
		{size: "1Mi", want: "1Mi"},
	}
	for _, tt := range tests {
		t.Run(tt.size, func(t *testing.T) {
			h := newHarness(t)
			res := h.call(t, "create_sandbox", map[string]any{"warmpool": "p", "volume_size": tt.size})
			if tt.wantErr != "" {
				if !res.IsError || !strings.Contains(text(res), tt.wantErr) || len(h.claims.created) != 0 {
					t.Fatalf("want an error with %q, got %s", tt.wantErr, text(res))
				}
				return
			}
			if res.IsError {
				t.Fatal(text(res))
			}
			if got := h.claims.created[0].VolumeSize; got.String() != tt.want {
				t.Errorf("volume size %s, want %s", got.String(), tt.want)
			}
		})
	}
}
