package tools

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/sync/errgroup"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/usage"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// Bounds of get_sandbox_metrics: each sandbox gets metricsPerSandbox (the in-sandbox sample
// takes a second of it), and at most metricsParallel are asked at once, so a slow sandbox
// holds up only its own row.
const (
	metricsPerSandbox = 10 * time.Second
	metricsParallel   = 8
)

// Where a row's CPU and memory came from.
const (
	sourceMetricsAPI = "metrics.k8s.io"
	sourceCgroup     = "sandbox cgroup"
)

type metricsArgs struct {
	SandboxClaimName string `json:"sandbox_claim_name"`
	Namespace        string `json:"namespace"`
}

// SandboxMetrics is one sandbox's row. Figures that could not be read are left out.
type SandboxMetrics struct {
	SandboxClaimName   string   `json:"sandbox_claim_name"`
	Namespace          string   `json:"namespace"`
	Running            bool     `json:"running" jsonschema:"the sandbox is Ready"`
	AgeSeconds         int64    `json:"age_seconds"`
	ShutdownTime       string   `json:"shutdown_time,omitempty" jsonschema:"when the sandbox will be deleted (RFC 3339)"`
	Source             string   `json:"source,omitempty" jsonschema:"where cpu and memory came from: metrics.k8s.io (the cluster's metrics-server) or sandbox cgroup (read inside the sandbox)"`
	CPUMillicores      *int64   `json:"cpu_millicores,omitempty"`
	CPUUsagePercent    *float64 `json:"cpu_usage_percent,omitempty" jsonschema:"of the CPU limit, or of one CPU when there is none"`
	MemoryBytes        *int64   `json:"memory_bytes,omitempty" jsonschema:"working set"`
	MemoryUsageMiB     *float64 `json:"memory_usage_mib,omitempty"`
	CPULimitMillicores int64    `json:"cpu_limit_millicores,omitempty"`
	MemoryLimitBytes   int64    `json:"memory_limit_bytes,omitempty"`
	DiskUsageBytes     *int64   `json:"disk_usage_bytes,omitempty" jsonschema:"size of the sandbox's working directory"`
	DiskFreeBytes      *int64   `json:"disk_free_bytes,omitempty" jsonschema:"free space on the filesystem of the working directory"`
	Note               string   `json:"note,omitempty" jsonschema:"why some figures are missing or where they came from"`
}

// MetricsResult is get_sandbox_metrics' answer.
type MetricsResult struct {
	Sandboxes []SandboxMetrics `json:"sandboxes"`
}

func metricsTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("get_sandbox_metrics",
		mcp.WithToolTitle("Sandbox metrics"),
		mcp.WithDescription("CPU, memory, limits, disk use, age and shutdown time of a sandbox, or of all yours in namespace."),
		inputSchema(objectSchema(nil, map[string]prop{
			"sandbox_claim_name": optionalClaimProp(),
			"namespace":          namespaceOrAllProp(),
		})),
		outputSchema[MetricsResult](),
		hints(true, false, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "read the sandbox metrics"
		var a metricsArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		owner, err := d.Owner(ctx)
		if err != nil {
			return failure(op, claimRef{}, err), nil
		}
		if a.SandboxClaimName != "" {
			ref, err := d.oneClaimRef(a)
			if err != nil {
				return failure(op, ref, err), nil
			}
			row, err := d.sandboxMetrics(ctx, owner, ref.Namespace, ref.Name)
			if err != nil {
				return failure(op, ref, err), nil
			}
			return structured(MetricsResult{Sandboxes: []SandboxMetrics{row}}), nil
		}
		claims, ref, err := d.ownedClaims(ctx, owner, a.Namespace)
		if err != nil {
			return failure(op, ref, err), nil
		}
		rows := make([]SandboxMetrics, len(claims))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(metricsParallel)
		for i, c := range claims {
			g.Go(func() error {
				row, err := d.sandboxMetrics(gctx, owner, c.Namespace, c.Name)
				if err != nil { // deleted meanwhile, or the API failed for this one
					row = SandboxMetrics{SandboxClaimName: c.Name, Namespace: c.Namespace, Note: err.Error()}
				}
				rows[i] = row
				return nil
			})
		}
		_ = g.Wait() // rows carry their own errors
		if ctx.Err() != nil {
			return failure(op, ref, ctx.Err()), nil
		}
		return structured(MetricsResult{Sandboxes: rows}), nil
	}}
}

// oneClaimRef checks the namespace of a call about one sandbox.
func (d Deps) oneClaimRef(a metricsArgs) (claimRef, error) {
	ref := claimRef{Namespace: a.Namespace, Name: a.SandboxClaimName}
	if a.Namespace == allNamespaces {
		return ref, badInput("namespace %q covers many sandboxes; with sandbox_claim_name, pass the sandbox's namespace or leave it out", allNamespaces)
	}
	ns, err := d.namespace(a.Namespace)
	ref.Namespace = ns
	return ref, err
}

// ownedClaims lists the owner's claims in one namespace or, with allNamespaces, in each
// allowed one.
func (d Deps) ownedClaims(ctx context.Context, owner, namespace string) ([]kube.Claim, claimRef, error) {
	namespaces, err := d.catalogNamespaces(namespace)
	if err != nil {
		return nil, claimRef{}, err
	}
	var all []kube.Claim
	for _, ns := range namespaces {
		list, err := d.Claims.List(ctx, ns, owner)
		if err != nil {
			return nil, claimRef{Namespace: ns}, err
		}
		all = append(all, list...)
	}
	slices.SortFunc(all, func(a, b kube.Claim) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return all, claimRef{}, nil
}

// sandboxMetrics fills one row within metricsPerSandbox. It fails only when the claim cannot
// be read; a figure that cannot be had is left out and its note says why.
func (d Deps) sandboxMetrics(ctx context.Context, owner, namespace, name string) (SandboxMetrics, error) {
	ctx, cancel := context.WithTimeout(ctx, metricsPerSandbox)
	defer cancel()
	row := SandboxMetrics{SandboxClaimName: name, Namespace: namespace}
	u, err := d.Claims.Usage(ctx, namespace, name, owner)
	if err != nil {
		return row, err
	}
	row.Running = u.Claim.Ready
	row.AgeSeconds = int64(time.Since(u.Claim.Created).Seconds())
	if !u.Claim.ShutdownAt.IsZero() {
		row.ShutdownTime = u.Claim.ShutdownAt.UTC().Format(time.RFC3339)
	}
	row.CPULimitMillicores, row.MemoryLimitBytes = u.CPULimitMillis, u.MemoryLimitBytes
	var notes []string
	if u.Measured {
		row.Source = sourceMetricsAPI
		row.setCPUMemory(u.CPUMillis, u.MemoryBytes)
	} else {
		notes = append(notes, u.MetricsErr.Error())
	}
	if !row.Running {
		notes = append(notes, "the sandbox is not ready, so nothing was read inside it")
		row.Note = strings.Join(notes, "; ")
		return row, nil
	}
	f, err := usage.Sample(ctx, d.Conn, target(u.Claim), !u.Measured, time.Until(deadline(ctx)))
	switch {
	case err != nil:
		notes = append(notes, "reading inside the sandbox failed: "+err.Error())
	default:
		if f.DiskUsedBytes >= 0 {
			row.DiskUsageBytes = &f.DiskUsedBytes
		}
		if f.DiskFreeBytes >= 0 {
			row.DiskFreeBytes = &f.DiskFreeBytes
		}
		if !u.Measured && f.Cgroup {
			// The figures are the main container's: so are the limits they are read against,
			// where the cgroup says (the template's are the pod's, all containers together).
			row.Source = sourceCgroup
			if f.CPULimitMillis >= 0 {
				row.CPULimitMillicores = f.CPULimitMillis
			}
			if f.MemLimitBytes >= 0 {
				row.MemoryLimitBytes = f.MemLimitBytes
			}
			row.setCPUMemory(f.CPUMillis, f.MemoryBytes)
			notes = append(notes, "CPU and memory read from the sandbox's main container's cgroup instead")
		}
	}
	row.Note = strings.Join(notes, "; ")
	return row, nil
}

func (r *SandboxMetrics) setCPUMemory(cpuMillis, memBytes int64) {
	if cpuMillis >= 0 {
		r.CPUMillicores = &cpuMillis
		of := max(r.CPULimitMillicores, 0)
		if of == 0 {
			of = 1000
		}
		pct := math.Round(float64(cpuMillis)*1000/float64(of)) / 10
		r.CPUUsagePercent = &pct
	}
	if memBytes >= 0 {
		r.MemoryBytes = &memBytes
		mib := math.Round(float64(memBytes)*10/(1<<20)) / 10
		r.MemoryUsageMiB = &mib
	}
}

func deadline(ctx context.Context) time.Time {
	dl, _ := ctx.Deadline()
	return dl
}
