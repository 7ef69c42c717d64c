package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/bench/load"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

// loadPerPrincipal is how many sessionless clients share a principal (and its sandbox) in item
// 8: with a churn worker and two sessions of the same principal at most 8, the per-principal
// cap of concurrent calls, even when one replica takes them all.
const loadPerPrincipal = 5

// loadTools are the tools item 8 reports, in order.
var loadTools = []string{"execute_command", "get_sandbox_status", "create_sandbox", "delete_sandbox"}

// loadRun is what one replica count measured.
type loadRun struct {
	replicas       int
	res            load.Result
	rss, peak      []float64 // MiB per replica
	before, after  []int     // goroutines per replica
	served         []int
	goroutinesBack bool
}

func (b *bench) replicasLoad(ctx context.Context) (*section, error) {
	cfg := b.cfg
	principals := (cfg.loadClients + loadPerPrincipal - 1) / loadPerPrincipal
	s := &section{title: fmt.Sprintf("8. Replicas: the same load on one and on %d server replicas", cfg.loadReplicas),
		what: fmt.Sprintf("Server processes with `--http` (sandboxd-in-cluster, pod IP) behind one round-robin front "+
			"(bench/load, as a Service spreads connections). The load: %d concurrent sessionless clients (%d principals, "+
			"each with one sandbox its clients share) running %d `execute_command` calls each, with a `get_sandbox_status` "+
			"after every fifth; %d concurrent 2025-11-25 sessions, each on one replica (as affinity keeps it), creating a "+
			"sandbox, running 5 commands and deleting it; and %d churn workers creating, using and deleting sandboxes until "+
			"%d sandboxes in all have been created and deleted. The warm pool holds %d sandboxes, so most creates wait "+
			"for a new pod. Goroutines are read from each replica's `/metrics` after a small warm-up load and again after "+
			"the load (waiting up to 60 s: gRPC connections to deleted sandboxes close 30 s after their last call); RSS from /proc.", cfg.loadClients, principals, cfg.loadCalls, cfg.loadSessions,
			cfg.loadChurners, cfg.loadSandboxes, cfg.poolReplicas)}
	var tokens, pairs []string
	for i := range principals {
		tokens = append(tokens, fmt.Sprintf("load-%02d-%s", i, strings.Repeat("k", 20)))
		pairs = append(pairs, fmt.Sprintf("p%02d:%s", i, tokens[i]))
	}
	env, err := b.serverEnv("SANDBOXD_POD_IP")
	if err != nil {
		return nil, err
	}
	env = append(env, "K8S_SANDBOX_AUTH__TOKENS="+strings.Join(pairs, ","))
	var runs []loadRun
	for _, n := range []int{1, cfg.loadReplicas} {
		r, err := b.loadOn(ctx, n, env, tokens)
		if err != nil {
			return s, fmt.Errorf("%d replicas: %w", n, err)
		}
		runs = append(runs, r)
	}
	header := []string{"tool"}
	for _, r := range runs {
		header = append(header, fmt.Sprintf("%d replica(s): calls", r.replicas), "p50", "p99")
	}
	lat := table{caption: "Latency per tool (ms):", header: header}
	for _, tool := range loadTools {
		row := []string{tool}
		for _, r := range runs {
			row = append(row, strconv.Itoa(len(r.res.Latency[tool])), strings.TrimSpace(fmtNum(ms(r.res.Quantile(tool, 0.5)), "")),
				strings.TrimSpace(fmtNum(ms(r.res.Quantile(tool, 0.99)), "")))
		}
		lat.rows = append(lat.rows, row)
	}
	whole := table{caption: "The runs:", header: []string{"replicas", "wall", "errors", "created / deleted", "requests per replica",
		"RSS per replica (MiB)", "peak RSS per replica (MiB)", "goroutines before → after"}}
	for _, r := range runs {
		whole.rows = append(whole.rows, []string{strconv.Itoa(r.replicas), fmtNum(r.res.Wall.Seconds(), "s"), strconv.Itoa(r.res.Errors),
			fmt.Sprintf("%d / %d", r.res.Created, r.res.Deleted), ints(r.served), floats(r.rss), floats(r.peak),
			fmt.Sprintf("%s → %s", ints(r.before), ints(r.after))})
	}
	s.tables = append(s.tables, lat, whole)
	for _, r := range runs {
		if r.res.Errors > 0 {
			s.notes = append(s.notes, fmt.Sprintf("%d replica(s): first errors: %s", r.replicas, strings.Join(r.res.First, "; ")))
		}
		if !r.goroutinesBack {
			s.notes = append(s.notes, fmt.Sprintf("%d replica(s): goroutines did not come back within 60 s.", r.replicas))
		}
	}
	one, many := runs[0], runs[1]
	s.targets = append(s.targets, target{goal: "no call fails under the load, on one replica and on several",
		measured: fmt.Sprintf("%d and %d errors", one.res.Errors, many.res.Errors), met: one.res.Errors == 0 && many.res.Errors == 0,
		figures: []figure{{name: "errors", value: float64(one.res.Errors + many.res.Errors), unit: "calls"}}})
	s.targets = append(s.targets, target{goal: "goroutines back to their baseline after the load",
		measured: fmt.Sprintf("%s → %s; %s → %s", ints(one.before), ints(one.after), ints(many.before), ints(many.after)),
		met:      one.goroutinesBack && many.goroutinesBack})
	return s, nil
}

// loadOn runs the load against n replicas.
func (b *bench) loadOn(ctx context.Context, n int, env, tokens []string) (loadRun, error) {
	out := loadRun{replicas: n}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return out, err
	}
	front := load.NewFront(ln)
	defer front.Close()
	var servers []*httpServer
	var metrics, bases []string
	defer func() {
		for _, h := range servers {
			h.close()
		}
	}()
	for range n {
		ml, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return out, err
		}
		maddr := ml.Addr().String()
		ml.Close()
		h, err := startHTTP(ctx, b.cfg.server, append([]string{"K8S_SANDBOX_HTTP__PUBLIC_URL=" + front.URL()}, env...), "--metrics-addr", maddr)
		if err != nil {
			return out, err
		}
		servers = append(servers, h)
		u, _ := url.Parse(h.base)
		front.Add(u.Host)
		bases = append(bases, h.base)
		metrics = append(metrics, "http://"+maddr+"/metrics")
	}
	cfg := load.Config{Front: front.URL(), Replicas: bases, Tokens: tokens, Namespace: b.ns.name, Pool: localstack.SandboxdPool}
	warm := cfg
	warm.Tokens = tokens[:1]
	warm.Clients, warm.Calls, warm.Sessions, warm.Sandboxes, warm.Churners = 2, 2, n, 1+n, 1
	logf("item 8: %d replica(s), warm-up", n)
	if r, err := load.Run(ctx, warm); err != nil || r.Errors > 0 {
		return out, fmt.Errorf("warm-up: %v %v", err, r.First)
	}
	time.Sleep(2 * time.Second)
	if out.before, err = load.Goroutines(metrics); err != nil {
		return out, err
	}
	for _, h := range servers {
		if err := resetPeak(h.pid()); err != nil {
			return out, err
		}
	}
	cfg.Clients, cfg.Calls, cfg.Sessions, cfg.Sandboxes = b.cfg.loadClients, b.cfg.loadCalls, b.cfg.loadSessions, b.cfg.loadSandboxes
	cfg.Churners = b.cfg.loadChurners
	logf("item 8: %d replica(s), load", n)
	if out.res, err = load.Run(ctx, cfg); err != nil {
		return out, err
	}
	out.served = front.Served()
	for _, h := range servers {
		rss, err := load.ProcStatus(h.pid(), "VmRSS")
		if err != nil {
			return out, err
		}
		peak, err := load.ProcStatus(h.pid(), "VmHWM")
		if err != nil {
			return out, err
		}
		out.rss, out.peak = append(out.rss, mib(rss)), append(out.peak, mib(peak))
	}
	out.after, out.goroutinesBack, err = load.GoroutinesBack(ctx, metrics, out.before, 60*time.Second)
	return out, err
}

func ints(v []int) string {
	var s []string
	for _, x := range v {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ", ")
}

func floats(v []float64) string {
	var s []string
	for _, x := range v {
		s = append(s, fmt.Sprintf("%.0f", x))
	}
	return strings.Join(s, ", ")
}
