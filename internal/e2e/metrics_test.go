//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"testing"
	"time"
)

type (
	metricsRow struct {
		SandboxClaimName   string `json:"sandbox_claim_name"`
		Namespace          string `json:"namespace"`
		Running            bool   `json:"running"`
		ShutdownTime       string `json:"shutdown_time"`
		Source             string `json:"source"`
		CPUMillicores      *int64 `json:"cpu_millicores"`
		MemoryBytes        *int64 `json:"memory_bytes"`
		CPULimitMillicores int64  `json:"cpu_limit_millicores"`
		MemoryLimitBytes   int64  `json:"memory_limit_bytes"`
		DiskUsageBytes     *int64 `json:"disk_usage_bytes"`
		Note               string `json:"note"`
	}
	metricsResult struct {
		Sandboxes []metricsRow `json:"sandboxes"`
	}
)

// complete says whether a row has every figure a ready sandbox should have.
func (r metricsRow) complete() bool {
	return r.Running && r.Source != "" && r.CPUMillicores != nil && r.MemoryBytes != nil && r.DiskUsageBytes != nil &&
		r.MemoryLimitBytes > 0 && r.CPULimitMillicores > 0
}

// TestMetricsRiseUnderLoad: get_sandbox_metrics on the real node reads metrics-server's figures
// for a sandbox that burns a CPU and holds 300 MiB, sees the disk use of a file it wrote, and
// finds the sandbox again with namespace "*" from a second server that has an allowlist.
func TestMetricsRiseUnderLoad(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	c := connections()[4] // sandboxd in cluster: python3 is in its image too
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	owner := "K8S_SANDBOX_STDIO_OWNER=metrics-" + hex.EncodeToString(b)
	s := stdioSession(t, append([]string{owner}, c.env...), "")
	created := call[createResult](t, s, "create_sandbox", map[string]any{"warmpool": c.pool, "namespace": ns.Name, "shutdown_after_seconds": 900})
	with := sandboxArgs(created.SandboxClaimName, ns.Name)
	one := func() metricsRow {
		t.Helper()
		m := call[metricsResult](t, s, "get_sandbox_metrics", with(nil))
		if len(m.Sandboxes) != 1 || m.Sandboxes[0].SandboxClaimName != created.SandboxClaimName {
			t.Fatalf("get_sandbox_metrics: %+v", m)
		}
		return m.Sandboxes[0]
	}
	base := one()
	if !base.complete() || base.ShutdownTime == "" {
		t.Fatalf("a ready sandbox's row lacks figures: %+v", base)
	}

	call[execResult](t, s, "execute_command", with(map[string]any{"command": "head -c 20000000 /dev/urandom > big.bin"}))
	if d := one().DiskUsageBytes; d == nil || *d < *base.DiskUsageBytes+19_000_000 {
		t.Errorf("disk use after writing 20 MB: %v, was %d", d, *base.DiskUsageBytes)
	}

	burn := call[processInfo](t, s, "start_process", with(map[string]any{"command": "python3",
		"args": []any{"-c", "b = b'x' * (300 << 20)\nwhile True: pass"}}))
	defer call[map[string]any](t, s, "signal_process", with(map[string]any{"process_id": burn.ProcessID, "signal": "KILL"}))
	// A busy loop's share of the node depends on what else runs (the pod requests 25m), so the
	// CPU figure must clearly rise over the idle base rather than reach a fixed share; the
	// memory held is deterministic.
	wantCPU := max(2**base.CPUMillicores, *base.CPUMillicores+100)
	risen := func(r metricsRow) bool {
		return r.Source == "metrics.k8s.io" && r.CPUMillicores != nil && r.MemoryBytes != nil &&
			*r.CPUMillicores >= wantCPU && *r.MemoryBytes >= *base.MemoryBytes+250<<20
	}
	var last metricsRow
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if last = one(); risen(last) {
			break
		}
		time.Sleep(5 * time.Second)
	}
	if !risen(last) {
		t.Fatalf("metrics did not rise within 3 minutes under load (base cpu %dm, memory %d; want cpu >= %dm): %+v cpu %s memory %s",
			*base.CPUMillicores, *base.MemoryBytes, wantCPU, last, ptr(last.CPUMillicores), ptr(last.MemoryBytes))
	}

	// Every namespace of the allowlist, from another server process with the same owner.
	other := stdioSession(t, append([]string{owner, "K8S_SANDBOX_ALLOWED_NAMESPACES=" + ns.Name + ",default"}, c.env...), "")
	all := call[metricsResult](t, other, "get_sandbox_metrics", map[string]any{"namespace": "*"})
	if len(all.Sandboxes) != 1 || all.Sandboxes[0].SandboxClaimName != created.SandboxClaimName || !all.Sandboxes[0].complete() {
		t.Errorf(`namespace "*": %+v`, all)
	}
}

// ptr prints a figure that may be missing (the cgroup fallback has no CPU figure).
func ptr(v *int64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatInt(*v, 10)
}
