package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/usage"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

func TestSandboxMetrics(t *testing.T) {
	const sample = "disk 8 1000 500\ncpu 0 250000000 ns 10.0 11.0\nmem 2097152 1048576 4194304\ncpumax 50000 100000\n"
	i64 := func(v int64) *int64 { return &v }
	f64 := func(v float64) *float64 { return &v }
	tests := []struct {
		name     string
		claims   []string // namespace/name, owned by the caller
		args     map[string]any
		allowed  []string
		usage    map[string]kube.Usage
		notReady bool
		stdout   string
		want     []SandboxMetrics
		wantErr  string
		execs    int
	}{
		{name: "metrics API", args: map[string]any{"sandbox_claim_name": "a", "namespace": "ns1"}, stdout: "disk 8 1000 500\n",
			usage: map[string]kube.Usage{"ns1/a": {Measured: true, CPUMillis: 500, MemoryBytes: 3 << 20, CPULimitMillis: 1000, MemoryLimitBytes: 512 << 20}},
			want: []SandboxMetrics{{SandboxClaimName: "a", Namespace: "ns1", Running: true, Source: sourceMetricsAPI, CPUMillicores: i64(500),
				CPUUsagePercent: f64(50), MemoryBytes: i64(3 << 20), MemoryUsageMiB: f64(3), CPULimitMillicores: 1000, MemoryLimitBytes: 512 << 20,
				DiskUsageBytes: i64(8 << 10), DiskFreeBytes: i64(500 << 10)}}, execs: 1},
		{name: "cgroup fallback", args: map[string]any{"sandbox_claim_name": "a", "namespace": "ns1"}, stdout: sample,
			want: []SandboxMetrics{{SandboxClaimName: "a", Namespace: "ns1", Running: true, Source: sourceCgroup, CPUMillicores: i64(250),
				CPUUsagePercent: f64(50), MemoryBytes: i64(1 << 20), MemoryUsageMiB: f64(1), CPULimitMillicores: 500, MemoryLimitBytes: 4 << 20,
				DiskUsageBytes: i64(8 << 10), DiskFreeBytes: i64(500 << 10),
				Note: "no figures from metrics.k8s.io: metrics.k8s.io is not served by this cluster (no metrics-server); CPU and memory read from the sandbox's main container's cgroup instead"}}, execs: 1},
		{name: "not ready", args: map[string]any{"sandbox_claim_name": "a", "namespace": "ns1"}, notReady: true,
			want: []SandboxMetrics{{SandboxClaimName: "a", Namespace: "ns1",
				Note: "no figures from metrics.k8s.io: metrics.k8s.io is not served by this cluster (no metrics-server); the sandbox is not ready, so nothing was read inside it"}}},
		{name: "every sandbox in a namespace", claims: []string{"ns1/a", "ns1/b", "ns2/c"}, args: map[string]any{"namespace": "ns1"}, stdout: "disk 1 2 1\n",
			usage: map[string]kube.Usage{"ns1/a": {Measured: true, CPUMillis: 10}, "ns1/b": {Measured: true, CPUMillis: 20}},
			want: []SandboxMetrics{
				{SandboxClaimName: "a", Namespace: "ns1", Running: true, Source: sourceMetricsAPI, CPUMillicores: i64(10), CPUUsagePercent: f64(1), MemoryBytes: i64(0), MemoryUsageMiB: f64(0), DiskUsageBytes: i64(1 << 10), DiskFreeBytes: i64(1 << 10)},
				{SandboxClaimName: "b", Namespace: "ns1", Running: true, Source: sourceMetricsAPI, CPUMillicores: i64(20), CPUUsagePercent: f64(2), MemoryBytes: i64(0), MemoryUsageMiB: f64(0), DiskUsageBytes: i64(1 << 10), DiskFreeBytes: i64(1 << 10)},
			}, execs: 2},
		{name: "every allowed namespace", claims: []string{"ns1/a", "ns1/b", "ns2/c", "ns3/d"}, args: map[string]any{"namespace": "*"}, allowed: []string{"ns1", "ns2"}, stdout: "disk 1 2 1\n",
			usage: map[string]kube.Usage{"ns1/a": {Measured: true}, "ns1/b": {Measured: true}, "ns2/c": {Measured: true}},
			want: []SandboxMetrics{
				{SandboxClaimName: "a", Namespace: "ns1", Running: true, Source: sourceMetricsAPI, CPUMillicores: i64(0), CPUUsagePercent: f64(0), MemoryBytes: i64(0), MemoryUsageMiB: f64(0), DiskUsageBytes: i64(1 << 10), DiskFreeBytes: i64(1 << 10)},
				{SandboxClaimName: "b", Namespace: "ns1", Running: true, Source: sourceMetricsAPI, CPUMillicores: i64(0), CPUUsagePercent: f64(0), MemoryBytes: i64(0), MemoryUsageMiB: f64(0), DiskUsageBytes: i64(1 << 10), DiskFreeBytes: i64(1 << 10)},
				{SandboxClaimName: "c", Namespace: "ns2", Running: true, Source: sourceMetricsAPI, CPUMillicores: i64(0), CPUUsagePercent: f64(0), MemoryBytes: i64(0), MemoryUsageMiB: f64(0), DiskUsageBytes: i64(1 << 10), DiskFreeBytes: i64(1 << 10)},
			}, execs: 3},
		{name: "not found", args: map[string]any{"sandbox_claim_name": "nope", "namespace": "ns1"}, wantErr: `Sandbox claim "nope" is not found in namespace "ns1".`},
		{name: "all without allowlist", args: map[string]any{"namespace": "*"}, wantErr: "K8S_SANDBOX_ALLOWED_NAMESPACES"},
		{name: "one claim in all", args: map[string]any{"namespace": "*", "sandbox_claim_name": "a"}, allowed: []string{"ns1"}, wantErr: `namespace "*" covers many sandboxes`},
		{name: "sampling fails", args: map[string]any{"sandbox_claim_name": "a", "namespace": "ns1"}, stdout: "oops\n",
			usage: map[string]kube.Usage{"ns1/a": {Measured: true, CPUMillis: 1}},
			want: []SandboxMetrics{{SandboxClaimName: "a", Namespace: "ns1", Running: true, Source: sourceMetricsAPI, CPUMillicores: i64(1), CPUUsagePercent: f64(0.1), MemoryBytes: i64(0), MemoryUsageMiB: f64(0),
				Note: `reading inside the sandbox failed: usage: the sandbox's answer had no figures: "oops"`}}, execs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(d *Deps, _ *fakeClaims) { d.AllowedNamespaces = tt.allowed })
			if tt.claims == nil {
				tt.claims = []string{"ns1/a"}
			}
			for _, k := range tt.claims {
				ns, name, _ := strings.Cut(k, "/")
				h.claims.add(ns, name, testOwner)
				c := h.claims.claims[k]
				c.Ready, c.Created = !tt.notReady, time.Now().Add(-time.Minute)
				h.claims.claims[k] = c
			}
			h.claims.usage, h.conn.stdout = tt.usage, tt.stdout
			res := h.call(t, "get_sandbox_metrics", tt.args)
			if tt.wantErr != "" {
				if !res.IsError || !strings.Contains(text(res), tt.wantErr) {
					t.Fatalf("want an error with %q, got %s", tt.wantErr, text(res))
				}
				return
			}
			if res.IsError {
				t.Fatalf("get_sandbox_metrics: %s", text(res))
			}
			var got MetricsResult
			decode(t, res.StructuredContent, &got)
			if len(got.Sandboxes) != len(tt.want) {
				t.Fatalf("got %d rows, want %d: %+v", len(got.Sandboxes), len(tt.want), got)
			}
			for i, w := range tt.want {
				g := got.Sandboxes[i]
				if g.AgeSeconds < 59 || g.AgeSeconds > 120 {
					t.Errorf("row %d age %d, want about 60", i, g.AgeSeconds)
				}
				g.AgeSeconds = 0
				if gs, ws := jsonOf(t, g), jsonOf(t, w); gs != ws {
					t.Errorf("row %d:\n got %s\nwant %s", i, gs, ws)
				}
			}
			if h.conn.calls != tt.execs {
				t.Errorf("%d execs in the sandbox, want %d", h.conn.calls, tt.execs)
			}
		})
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMetricsBoundsInReadme: the README states get_sandbox_metrics' bounds from their owners.
func TestMetricsBoundsInReadme(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(readme)), " ")
	for _, want := range []string{
		fmt.Sprintf("Each sandbox has %d s and at most %d are read at once", int(metricsPerSandbox.Seconds()), metricsParallel),
		fmt.Sprintf("CPU over %d s", usage.SampleSeconds),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("README does not say %q", want)
		}
	}
}
