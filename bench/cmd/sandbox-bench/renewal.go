package main

import (
	"context"
	"fmt"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

// renewalCost (item 9): what renewal on use costs the Kubernetes API. The same paced series of
// calls on one sandbox with renewal on (the default) and off, each server reaching the API
// server through its own counting proxy, so that every request counted is that server's.
func (b *bench) renewalCost(ctx context.Context) (*section, error) {
	calls, window, span := b.cfg.renewCalls, b.cfg.renewWindow, b.cfg.renewSpan
	pace := span / time.Duration(calls)
	// Renewal moves the shutdown time once less than half the window is left, at most once per
	// half window: over the span that is about span / (window/2) PATCHes, whatever the call rate.
	expect := int(span/(window/2)) + 1
	s := &section{title: "9. Renewal on use: Kubernetes API requests per 1,000 calls on one sandbox",
		what: fmt.Sprintf("One sandboxd sandbox created with `shutdown_after_seconds: %d`, then %d `execute_command` calls (`true`), one "+
			"every %s (%s in all), from a server over stdio with renewal on (the default) and with `K8S_SANDBOX_RENEW_ON_USE=false` "+
			"(the baseline, whose sandbox gets a window longer than the span: unrenewed, it would expire mid-series). Each server reaches the API server through a loopback proxy of its own that counts its requests by "+
			"verb and resource, from just after create_sandbox's answer to a second after the last call (a renewal's PATCH runs "+
			"after the call that triggers it).", int(window/time.Second), calls, pace, span)}
	tbl := table{caption: "Requests during the calls:", header: []string{"renewal", "calls", "PATCH sandboxclaims", "all requests",
		"per 1,000 calls", "shutdown time moved by", "requests by verb and resource"}}
	patches := map[bool]int{}
	for _, on := range []bool{false, true} {
		// Without renewal a sandbox lives its creation's window: the baseline's outlasts the span.
		w := window
		if !on {
			w = 2*span + window
		}
		r, err := b.renewalSeries(ctx, on, calls, w, pace)
		if err != nil {
			return s, err
		}
		patches[on] = r.counts["PATCH sandboxclaims"]
		total := 0
		for _, n := range r.counts {
			total += n
		}
		name := "off"
		if on {
			name = "on"
		}
		tbl.rows = append(tbl.rows, []string{name, fmt.Sprint(calls), fmt.Sprint(patches[on]), fmt.Sprint(total),
			fmt.Sprintf("%.0f", float64(total)*1000/float64(calls)), r.moved.Round(time.Second).String(), countsText(r.counts)})
	}
	s.tables = append(s.tables, tbl)
	t := target{goal: "renewal on: at most a few PATCHes per 1,000 calls, never one per call",
		measured: fmt.Sprintf("%d PATCHes with renewal on (at most %d expected over %s with a %s window), %d with it off",
			patches[true], expect, span, window, patches[false]),
		met: patches[true] >= 1 && patches[true] <= expect && patches[false] == 0,
		figures: []figure{{name: "PATCHes per 1,000 calls, renewal on", value: float64(patches[true]) * 1000 / float64(calls), unit: "PATCHes"},
			{name: "PATCHes per 1,000 calls, renewal off", value: float64(patches[false]) * 1000 / float64(calls), unit: "PATCHes"}}}
	if !t.met {
		t.why = "See the table: no renewal at all means the shutdown time never moved; more than expected means a PATCH per call."
	}
	s.targets = append(s.targets, t)
	return s, nil
}

type renewalRun struct {
	counts map[string]int
	moved  time.Duration // how far the claim's shutdown time moved over the series
}

func (b *bench) renewalSeries(ctx context.Context, renew bool, calls int, window, pace time.Duration) (renewalRun, error) {
	counter, err := newAPICounter(b.stack.RestConfig)
	if err != nil {
		return renewalRun{}, err
	}
	defer counter.close()
	env, err := b.serverEnv("SANDBOXD_POD_IP")
	if err != nil {
		return renewalRun{}, err
	}
	env = append(env, "KUBECONFIG="+counter.kubeconfig, fmt.Sprintf("K8S_SANDBOX_RENEW_ON_USE=%t", renew))
	srv, err := startStdio(ctx, b.cfg.server, env)
	if err != nil {
		return renewalRun{}, err
	}
	defer srv.close()
	var created struct {
		SandboxClaimName string `json:"sandbox_claim_name"`
		ShutdownTime     string `json:"shutdown_time"`
	}
	args := map[string]any{"warmpool": localstack.SandboxdPool, "namespace": b.ns.name, "shutdown_after_seconds": int(window / time.Second)}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	err = callTool(cctx, srv.cs, "create_sandbox", args, &created)
	cancel()
	if err != nil {
		return renewalRun{}, err
	}
	claim := map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": b.ns.name}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = callTool(dctx, srv.cs, "delete_sandbox", claim, nil)
	}()
	counter.take()
	exec := map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": b.ns.name, "command": "true"}
	next := time.Now()
	for i := range calls {
		if err := ctx.Err(); err != nil {
			return renewalRun{}, err
		}
		var res execResult
		if err := callTool(ctx, srv.cs, "execute_command", exec, &res); err != nil {
			return renewalRun{}, fmt.Errorf("call %d of %d: %w", i+1, calls, err)
		}
		if res.ExitCode != 0 {
			return renewalRun{}, fmt.Errorf("%w: call %d exited %d", errMismatch, i+1, res.ExitCode)
		}
		next = next.Add(pace)
		time.Sleep(time.Until(next))
	}
	time.Sleep(time.Second)
	run := renewalRun{counts: counter.take()}
	var status struct {
		ShutdownTime string `json:"shutdown_time"`
	}
	if err := callTool(ctx, srv.cs, "get_sandbox_status", claim, &status); err != nil {
		return renewalRun{}, err
	}
	from, err1 := time.Parse(time.RFC3339, created.ShutdownTime)
	to, err2 := time.Parse(time.RFC3339, status.ShutdownTime)
	if err1 != nil || err2 != nil {
		return renewalRun{}, fmt.Errorf("%w: shutdown times %q and %q", errMismatch, created.ShutdownTime, status.ShutdownTime)
	}
	run.moved = to.Sub(from)
	return run, nil
}
