package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/bench/load"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// httpGoal is the throughput the server must keep against direct calls with the first
// client count (issue 13).
const httpGoal = 0.8

// Item 4 runs like a shared deployment: the server has bearer tokens for one principal per
// sandbox, and the clients speak the sessionless 2026-07-28 protocol, where the principal owns
// the sandboxes (in the 2025-11-25 one each session owns its own, and ending it releases them).
// With as many clients as sandboxes each principal has one client; with more, several clients
// of a principal use its sandbox at once, within the per-principal limit of concurrent calls.

// loadClient is one of the concurrent HTTP clients: its own MCP client as one principal, that
// principal's sandbox, and a direct client to the same sandbox for the baseline.
type loadClient struct {
	cs      *mcp.ClientSession
	sandbox sandbox
	direct  *sandboxdDirect
}

// principal is one bearer token and the sandbox its first session created.
type principal struct {
	token   string
	sandbox sandbox
}

func (b *bench) httpLoad(ctx context.Context) (*section, error) {
	counts := []int{b.cfg.httpClients, b.cfg.httpClientsMore}
	nsb, m := b.cfg.httpClients, b.cfg.httpCalls
	s := &section{title: fmt.Sprintf("4. HTTP mode: %d and %d concurrent clients running execute_command", counts[0], counts[1]),
		what: fmt.Sprintf("The server runs with `--http` (sandboxd-in-cluster, pod IP) and bearer tokens for %d principals, "+
			"each with one sandbox. Each client is an MCP client (the SDK's default, sessionless protocol) of one principal, running %d `execute_command` "+
			"calls of `%s` back to back in that principal's sandbox: with %d clients one per principal, with %d clients %d per "+
			"principal. The baseline is as many goroutines, each with its own gRPC connection, calling `Execute` directly on "+
			"the same sandboxes. %d measured rounds per side after one warm-up round, alternating which side goes first. "+
			"Throughput is calls per second of one round; latencies are per call over all rounds.",
			nsb, m, smallCommand, counts[0], counts[1], counts[1]/nsb, b.cfg.httpRounds)}
	principals := make([]principal, nsb)
	var tokens []string
	for i := range principals {
		var r [12]byte
		_, _ = rand.Read(r[:])
		principals[i].token = "bench-" + hex.EncodeToString(r[:])
		tokens = append(tokens, fmt.Sprintf("p%02d:%s", i, principals[i].token))
	}
	env, err := b.serverEnv("SANDBOXD_POD_IP")
	if err != nil {
		return nil, err
	}
	env = append(env, "K8S_SANDBOX_AUTH__TOKENS="+strings.Join(tokens, ","))
	prof, args, err := b.profileArgs("item4-http")
	if err != nil {
		return nil, err
	}
	h, err := startHTTP(ctx, b.cfg.server, env, args...)
	if err != nil {
		return nil, err
	}
	defer h.close()
	// The principals own their sandboxes (sessionless), so ending the clients or the server
	// leaves them running for their hour of shutdown_after_seconds: delete them, or the next
	// items find the node's CPU requests taken (item 8 stalled on 3 runs' 48).
	defer b.deletePrincipalSandboxes(ctx, h, principals)
	if err := b.principalSandboxes(ctx, h, principals); err != nil {
		return nil, err
	}
	if err := resetPeak(h.pid()); err != nil {
		return nil, err
	}
	stopProfile := prof.collect(ctx)
	defer stopProfile()
	for k, n := range counts {
		lr, err := b.loadAt(ctx, h, principals, n)
		if err != nil {
			return s, fmt.Errorf("%d clients: %w", n, err)
		}
		lat, tput, handler := lr.lat, lr.tput, lr.handler
		s.comparisons(fmt.Sprintf("%d clients:", n), comparison{name: "latency per call", unit: "ms", base: lat[0], subj: lat[1]},
			comparison{name: "throughput per round", unit: "calls/s", base: tput[0], subj: tput[1]})
		rel := tput[1].median() / tput[0].median()
		note := fmt.Sprintf("With %d clients the server answers %s against %s direct (%.0f%%). Its handler takes %s per call "+
			"at the median (server log) against %s for a direct call; the rest of the server's %s is the HTTP transport "+
			"(authentication included) and waiting for the two CPUs, which the server shares with the sandboxes and this bench.",
			n, fmtNum(tput[1].median(), "calls/s"), fmtNum(tput[0].median(), "calls/s"), 100*rel,
			fmtNum(handler.median(), "ms"), fmtNum(lat[0].median(), "ms"), fmtNum(lat[1].median(), "ms"))
		if limit := float64(kube.DefaultQPS) / 2; math.Abs(tput[1].median()-limit)/limit < 0.1 {
			note += fmt.Sprintf(" The rate sits at %.0f calls/s, the Kubernetes client's limit for calls that miss the watch "+
				"cache: each reads the SandboxClaim and the Sandbox from the API, two tokens from one bucket of %d "+
				"requests/s (kube.DefaultQPS), so the handler mostly waits for tokens.", limit, kube.DefaultQPS)
		}
		s.notes = append(s.notes, note)
		s.tables = append(s.tables, lr.cpuTable(n))
		if bound := lr.serverFreeBound(); bound != "" {
			s.notes = append(s.notes, fmt.Sprintf("With %d clients %s", n, bound))
		}
		if grew := lr.busiestOthers(filepath.Base(b.cfg.server), filepath.Base(os.Args[0])); grew != "" {
			s.notes = append(s.notes, fmt.Sprintf("With %d clients, the other processes whose CPU per call grows most "+
				"when the calls go through the server (by command name, with the children they wait for): %s.", n, grew))
		}
		if k == 0 {
			s.targets = append(s.targets, target{goal: fmt.Sprintf("HTTP throughput with %d clients ≥ %.1f× direct", n, httpGoal),
				measured: fmt.Sprintf("%.2f× (%s vs %s)", rel, fmtNum(tput[1].median(), "calls/s"), fmtNum(tput[0].median(), "calls/s")),
				met:      rel >= httpGoal, figures: []figure{{name: "throughput ratio median", value: rel}}})
		}
	}
	peak, err := load.ProcStatus(h.pid(), "VmHWM")
	if err != nil {
		return nil, err
	}
	s.tables = append(s.tables, table{caption: "Server memory over both loads:", header: []string{"server peak RSS (VmHWM)"},
		rows: [][]string{{fmtNum(mib(peak), "MiB")}}})
	return s, nil
}

// loadAt runs the rounds with n clients spread over the principals, and returns latency and
// throughput per side (baseline, server) and the server's handler times.
func (b *bench) loadAt(ctx context.Context, h *httpServer, principals []principal, n int) (r loadResult, err error) {
	clients, err := b.loadClients(ctx, h, principals, n)
	defer func() {
		for _, c := range clients {
			if c.direct != nil {
				c.direct.close()
			}
			_ = c.cs.Close()
		}
	}()
	if err != nil {
		return r, err
	}
	base := func(ctx context.Context, c *loadClient) error {
		res, err := c.direct.execute(ctx, smallCommand)
		if err == nil && string(res.GetStdout()) != "hi\n" {
			err = fmt.Errorf("%w: %+v", errMismatch, res)
		}
		return err
	}
	subj := func(ctx context.Context, c *loadClient) error {
		var res execResult
		err := callTool(ctx, c.cs, "execute_command", b.claimArgs(c.sandbox, map[string]any{"command": smallCommand}), &res)
		if err == nil && (res.ExitCode != 0 || res.Stdout != "hi\n") {
			err = fmt.Errorf("%w: %+v", errMismatch, res)
		}
		return err
	}
	h.log.takeHandler("execute_command")
	m := b.cfg.httpCalls
	for round := range b.cfg.httpRounds + 1 {
		for k := range 2 {
			side := (round + k) % 2
			f := base
			if side == 1 {
				f = subj
			}
			cpu0, err := sampleCPU(h.pid())
			if err != nil {
				return r, err
			}
			l, wall, err := loadRound(ctx, clients, m, f)
			if err != nil {
				return r, fmt.Errorf("round %d, %s: %w", round, []string{"baseline", "server"}[side], err)
			}
			cpu1, err := sampleCPU(h.pid())
			if err != nil {
				return r, err
			}
			if round > 0 {
				r.lat[side] = append(r.lat[side], l...)
				r.tput[side] = append(r.tput[side], float64(n*m)/wall.Seconds())
				r.cpu[side] = r.cpu[side].add(cpu1.sub(cpu0))
				r.calls[side] += n * m
				r.wall[side] += wall
			}
		}
	}
	r.handler = h.log.takeHandler("execute_command")
	return r, nil
}

// loadResult is one client count's rounds, per side (baseline, server): every call's latency,
// each round's throughput, the CPU time spent over the measured rounds and their calls; and
// the server's handler times.
type loadResult struct {
	lat, tput [2]series
	cpu       [2]cpuUse
	calls     [2]int
	wall      [2]time.Duration
	handler   series
}

// cpuTable shows where each side's CPU goes per call: on two shared cores, a side's
// throughput is bounded by the CPU its calls take, whoever spends it.
func (r loadResult) cpuTable(n int) table {
	t := table{caption: fmt.Sprintf("%d clients: CPU time per call over the measured rounds (user + system; the machine's "+
		"two cores are shared by everything below; cores busy: the machine's CPU time over the rounds' wall time):", n),
		header: []string{"side", "whole machine", "this bench (its clients)", "server", "rest (sandboxes, node, control plane)", "cores busy"}}
	for side, name := range []string{"direct gRPC `Execute` (baseline)", "`execute_command` through the server"} {
		c := r.cpu[side]
		per := func(d time.Duration) string { return fmtNum(r.perCall(side, d), "ms") }
		t.rows = append(t.rows, []string{name, per(c.machine), per(c.bench), per(c.server), per(c.machine - c.bench - c.server),
			fmt.Sprintf("%.2f", r.busy(side))})
	}
	return t
}

// perCall is d in ms per measured call of side.
func (r loadResult) perCall(side int, d time.Duration) float64 {
	return ms(d) / float64(max(r.calls[side], 1))
}

// busy is how many cores side kept busy: the machine's CPU time over the rounds' wall time.
func (r loadResult) busy(side int) float64 {
	return r.cpu[side].machine.Seconds() / max(r.wall[side].Seconds(), 1e-9)
}

// cpuBound is how busy both sides must keep the cores (of 2) for throughput to be read as
// the inverse of the machine's CPU per call.
const cpuBound = 1.8

// serverFreeBound, when both sides are CPU-bound, says what the throughput ratio would be if
// the server process used no CPU at all: what the calls cost elsewhere (the bench's MCP
// clients, the runtime's streaming RPC, the kernel) is then the whole difference. Empty when
// a side left the cores idle.
func (r loadResult) serverFreeBound() string {
	if r.busy(0) < cpuBound || r.busy(1) < cpuBound {
		return ""
	}
	base, without := r.perCall(0, r.cpu[0].machine), r.perCall(1, r.cpu[1].machine-r.cpu[1].server)
	return fmt.Sprintf("both sides keep the two cores busy, so throughput goes as the inverse of the machine's CPU "+
		"per call: %s direct against %s through the server. Without the server process's own CPU, a call through it "+
		"would still cost the machine %s (%s more than direct, in the bench's MCP clients, the runtime and the kernel), "+
		"so no server code could take the ratio above %.2f here.",
		fmtNum(base, "ms"), fmtNum(r.perCall(1, r.cpu[1].machine), "ms"), fmtNum(without, "ms"),
		fmtNum(without-base, "ms"), base/without)
}

// busiestOthers names the processes other than the bench and the server whose CPU per call
// grows most from the baseline's rounds to the server's: what calls through the server
// cost elsewhere on the machine.
func (r loadResult) busiestOthers(exclude ...string) string {
	type grown struct {
		name string
		d    float64
	}
	var all []grown
	per := func(side int, name string) float64 { return r.perCall(side, r.cpu[side].byCommand[name]) }
	for name := range r.cpu[1].byCommand {
		if slices.Contains(exclude, name) {
			continue
		}
		if d := per(1, name) - per(0, name); d >= 0.05 {
			all = append(all, grown{name, d})
		}
	}
	slices.SortFunc(all, func(a, b grown) int { return cmp.Compare(b.d, a.d) })
	var parts []string
	for _, g := range all[:min(len(all), 6)] {
		parts = append(parts, fmt.Sprintf("`%s` %s (%s against %s)", g.name, fmtNum(g.d, "ms"),
			fmtNum(per(1, g.name), "ms"), fmtNum(per(0, g.name), "ms")))
	}
	return strings.Join(parts, ", ")
}

func connectAs(ctx context.Context, h *httpServer, token string) (*mcp.ClientSession, error) {
	hc := newHTTPClient()
	hc.Transport = load.Bearer{Token: token, Next: hc.Transport}
	return newClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: hc}, nil)
}

// principalSandboxes creates one sandbox per principal, all at once.
func (b *bench) principalSandboxes(ctx context.Context, h *httpServer, principals []principal) error {
	errs := make([]error, len(principals))
	var wg sync.WaitGroup
	for i := range principals {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			defer cancel()
			cs, err := connectAs(cctx, h, principals[i].token)
			if errs[i] = err; err != nil {
				return
			}
			defer cs.Close()
			var res createResult
			if errs[i] = callTool(cctx, cs, "create_sandbox", b.createArgs(localstack.SandboxdPool), &res); errs[i] != nil {
				return
			}
			ip, err := b.ns.podIP(cctx, res.SandboxName)
			errs[i] = err
			principals[i].sandbox = sandbox{claim: res.SandboxClaimName, name: res.SandboxName, podIP: ip}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("principal %d sandbox: %w\n%s", i, err, h.log.tail())
		}
	}
	return nil
}

// deletePrincipalSandboxes deletes what principalSandboxes created, even when ctx has ended.
func (b *bench) deletePrincipalSandboxes(ctx context.Context, h *httpServer, principals []principal) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range principals {
		if p.sandbox.claim == "" {
			continue
		}
		wg.Go(func() {
			cs, err := connectAs(ctx, h, p.token)
			if err == nil {
				err = callTool(ctx, cs, "delete_sandbox", b.claimArgs(p.sandbox, nil), nil)
				_ = cs.Close()
			}
			if err != nil {
				logf("item 4: deleting %s: %v", p.sandbox.claim, err)
			}
		})
	}
	wg.Wait()
}

// loadClients connects n sessions, client i as principal i mod len(principals), each with
// its own direct gRPC connection to that principal's sandbox.
func (b *bench) loadClients(ctx context.Context, h *httpServer, principals []principal, n int) ([]*loadClient, error) {
	clients := make([]*loadClient, 0, n)
	for i := range n {
		p := principals[i%len(principals)]
		cs, err := connectAs(ctx, h, p.token)
		if err != nil {
			return clients, fmt.Errorf("client %d: %w\n%s", i, err, h.log.tail())
		}
		c := &loadClient{cs: cs, sandbox: p.sandbox}
		clients = append(clients, c)
		if c.direct, err = newSandboxdDirect(p.sandbox.podIP); err != nil {
			return clients, err
		}
	}
	return clients, nil
}

// loadRound runs m calls per client, all clients at once, and returns every call's latency
// and the round's wall time.
func loadRound(ctx context.Context, clients []*loadClient, m int, call func(context.Context, *loadClient) error) (series, time.Duration, error) {
	lat := make([]series, len(clients))
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range clients {
		wg.Go(func() {
			for range m {
				t := time.Now()
				if err := call(ctx, c); err != nil {
					errs[i] = err
					return
				}
				lat[i].addDuration(time.Since(t))
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	var all series
	for i := range clients {
		if errs[i] != nil {
			return nil, 0, fmt.Errorf("client %d: %w", i, errs[i])
		}
		all = append(all, lat[i]...)
	}
	return all, wall, nil
}
