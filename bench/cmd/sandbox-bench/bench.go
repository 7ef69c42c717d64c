package main

import (
	"context"
	"fmt"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

// bench holds what several items share: the stack, the namespace, and one stdio server per
// runtime with one sandbox each (started on first use).
type bench struct {
	cfg   config
	stack *localstack.Stack
	ns    *benchNamespace

	sbd, py *runtimeUnderTest

	profiles int // servers profiled so far (-profile), for unique file names
}

// runtimeUnderTest is a stdio server connected one way, and a sandbox it created.
type runtimeUnderTest struct {
	srv     *stdioServer
	sandbox sandbox
	prof    *profiling // nil without -profile
}

type sandbox struct {
	claim, name, podIP string
}

func (b *bench) close() {
	for _, r := range []*runtimeUnderTest{b.sbd, b.py} {
		if r != nil {
			r.srv.close()
		}
	}
}

// sandboxd is the server connected with sandboxd-in-cluster (pod IP), and a sandboxd sandbox.
func (b *bench) sandboxd(ctx context.Context) (*runtimeUnderTest, error) {
	if b.sbd == nil {
		r, err := b.startRuntime(ctx, "SANDBOXD_POD_IP", localstack.SandboxdPool)
		if err != nil {
			return nil, err
		}
		b.sbd = r
	}
	return b.sbd, nil
}

// python is the server connected in-cluster to the pod IP, and a python-runtime sandbox.
func (b *bench) python(ctx context.Context) (*runtimeUnderTest, error) {
	if b.py == nil {
		r, err := b.startRuntime(ctx, "IN_CLUSTER_POD_IP", localstack.PythonPool)
		if err != nil {
			return nil, err
		}
		b.py = r
	}
	return b.py, nil
}

// fresh starts a server of its own, with its own sandbox, for an item that measures memory:
// a server that already ran other items keeps their heap for a while.
func (b *bench) fresh(ctx context.Context, kind, pool string) (*runtimeUnderTest, error) {
	return b.startRuntime(ctx, kind, pool)
}

func (b *bench) serverEnv(kind string) ([]string, error) {
	settings, err := b.stack.Connection(kind)
	if err != nil {
		return nil, err
	}
	return serverEnv(b.stack.Kubeconfig, settings), nil
}

func (b *bench) startRuntime(ctx context.Context, kind, pool string) (*runtimeUnderTest, error) {
	env, err := b.serverEnv(kind)
	if err != nil {
		return nil, err
	}
	prof, args, err := b.profileArgs("item1-" + pool)
	if err != nil {
		return nil, err
	}
	srv, err := startStdio(ctx, b.cfg.server, env, args...)
	if err != nil {
		return nil, err
	}
	sb, err := b.createSandbox(ctx, srv, pool)
	if err != nil {
		srv.close()
		return nil, err
	}
	return &runtimeUnderTest{srv: srv, sandbox: sb, prof: prof}, nil
}

type createResult struct {
	SandboxClaimName string `json:"sandbox_claim_name"`
	SandboxName      string `json:"sandbox_name"`
}

// createSandbox claims a sandbox through the server (so the server's session owns it) that
// outlives the whole run.
func (b *bench) createSandbox(ctx context.Context, srv *stdioServer, pool string) (sandbox, error) {
	var res createResult
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := callTool(cctx, srv.cs, "create_sandbox", b.createArgs(pool), &res); err != nil {
		return sandbox{}, err
	}
	ip, err := b.ns.podIP(ctx, res.SandboxName)
	if err != nil {
		return sandbox{}, err
	}
	return sandbox{claim: res.SandboxClaimName, name: res.SandboxName, podIP: ip}, nil
}

func (b *bench) createArgs(pool string) map[string]any {
	return map[string]any{"warmpool": pool, "namespace": b.ns.name, "shutdown_after_seconds": 3600}
}

func (b *bench) claimArgs(sb sandbox, extra map[string]any) map[string]any {
	m := map[string]any{"sandbox_claim_name": sb.claim, "namespace": b.ns.name}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// interleave runs warm unmeasured rounds, then n measured rounds of base and subj, swapping
// which goes first every round so that drift and ordering effects hit both alike.
func interleave(ctx context.Context, warm, n int, base, subj func(context.Context) error) (series, series, error) {
	return interleavePaced(ctx, warm, n, 0, base, subj)
}

// interleaveCPU is interleave with the CPU time (ms) each of pids used per round over the
// warm and measured rounds, read from /proc before and after.
func interleaveCPU(ctx context.Context, warm, n int, base, subj func(context.Context) error, pids ...int) (series, series, []float64, error) {
	read := func() ([]time.Duration, error) {
		out := make([]time.Duration, len(pids))
		for i, pid := range pids {
			var err error
			if out[i], err = procCPU(pid); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	before, err := read()
	if err != nil {
		return nil, nil, nil, err
	}
	bs, ss, err := interleave(ctx, warm, n, base, subj)
	if err != nil {
		return nil, nil, nil, err
	}
	after, err := read()
	if err != nil {
		return nil, nil, nil, err
	}
	perCall := make([]float64, len(pids))
	for i := range pids {
		perCall[i] = ms(after[i]-before[i]) / float64(warm+n)
	}
	return bs, ss, perCall, nil
}

// interleavePaced is interleave with each round starting at least pace after the previous one.
func interleavePaced(ctx context.Context, warm, n int, pace time.Duration, base, subj func(context.Context) error) (series, series, error) {
	sides := [2]struct {
		name string
		run  func(context.Context) error
		out  series
	}{{name: "baseline", run: base}, {name: "server", run: subj}}
	for i := range warm + n {
		round := time.Now()
		for k := range 2 {
			side := &sides[(i+k)%2]
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			start := time.Now()
			err := side.run(ctx)
			d := time.Since(start)
			if err != nil {
				return nil, nil, fmt.Errorf("%s run %d: %w", side.name, i, err)
			}
			if i >= warm {
				side.out.addDuration(d)
			}
		}
		if rest := pace - time.Since(round); rest > 0 {
			time.Sleep(rest)
		}
	}
	return sides[0].out, sides[1].out, nil
}
