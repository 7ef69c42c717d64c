package main

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// loadClient is one of the concurrent HTTP clients: its own MCP session (hence its own
// owner and sandbox) and a direct client to the same sandbox for the baseline.
type loadClient struct {
	cs      *mcp.ClientSession
	sandbox sandbox
	direct  *sandboxdDirect
}

func (b *bench) httpLoad(ctx context.Context) (*section, error) {
	n, m := b.cfg.httpClients, b.cfg.httpCalls
	s := &section{title: fmt.Sprintf("4. HTTP mode: %d concurrent clients running execute_command", n),
		what: fmt.Sprintf("The server runs with `--http` (sandboxd-in-cluster, pod IP). %d MCP clients, each its own session "+
			"(protocol %s) with its own sandbox, run %d `execute_command` calls of `%s` back to back; the baseline is %d "+
			"goroutines each calling gRPC `Execute` directly on the same %d sandboxes. %d measured rounds per side after one "+
			"warm-up round, alternating which side goes first. Throughput is calls per second of one round; latencies are "+
			"per call over all rounds.", n, protocolVersion, m, smallCommand, n, n, b.cfg.httpRounds)}
	env, err := b.serverEnv("SANDBOXD_POD_IP")
	if err != nil {
		return nil, err
	}
	h, err := startHTTP(ctx, b.cfg.server, env)
	if err != nil {
		return nil, err
	}
	defer h.close()
	clients, err := b.loadClients(ctx, h, n)
	defer func() {
		for _, c := range clients {
			if c.direct != nil {
				c.direct.close()
			}
			_ = c.cs.Close()
		}
	}()
	if err != nil {
		return nil, err
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
	var lat, tput [2]series
	if err := resetPeak(h.pid()); err != nil {
		return nil, err
	}
	h.log.takeHandler("execute_command")
	for round := range b.cfg.httpRounds + 1 {
		for k := range 2 {
			side := (round + k) % 2
			f := base
			if side == 1 {
				f = subj
			}
			l, wall, err := loadRound(ctx, clients, m, f)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", round, []string{"baseline", "server"}[side], err)
			}
			if round > 0 {
				lat[side] = append(lat[side], l...)
				tput[side] = append(tput[side], float64(n*m)/wall.Seconds())
			}
		}
	}
	peak, err := procStatus(h.pid(), "VmHWM")
	if err != nil {
		return nil, err
	}
	handler := h.log.takeHandler("execute_command")
	s.comparisons("", comparison{name: "latency per call", unit: "ms", base: lat[0], subj: lat[1]},
		comparison{name: "throughput per round", unit: "calls/s", base: tput[0], subj: tput[1]})
	s.tables = append(s.tables, table{caption: "Inside the server during the load:",
		header: []string{"handler time median (tool call log)", "handler time p99", "server peak RSS (VmHWM)"},
		rows:   [][]string{{fmtNum(handler.median(), "ms"), fmtNum(handler.p99(), "ms"), fmtNum(mib(peak), "MiB")}}})
	note := fmt.Sprintf("No target is set for this item. With %d clients the server answers %s against %s direct "+
		"(%.0f%%). Its handler takes %s per call at the median (server log) against %s for a direct call; the rest of "+
		"the server's %s is the HTTP transport and waiting for the two CPUs, which the server shares with %d sandboxes "+
		"and this bench.", n, fmtNum(tput[1].median(), "calls/s"), fmtNum(tput[0].median(), "calls/s"),
		100*tput[1].median()/tput[0].median(), fmtNum(handler.median(), "ms"), fmtNum(lat[0].median(), "ms"),
		fmtNum(lat[1].median(), "ms"), n)
	if limit := float64(kube.DefaultQPS) / 2; math.Abs(tput[1].median()-limit)/limit < 0.1 {
		note += fmt.Sprintf(" The rate sits at %.0f calls/s, the Kubernetes client's limit for calls that miss the watch "+
			"cache: each reads the SandboxClaim and the Sandbox from the API (tools.Deps.resolve → kube.Client.Get), two "+
			"tokens from one bucket of %d requests/s (kube.DefaultQPS), so the handler mostly waits for tokens.", limit, kube.DefaultQPS)
	}
	s.notes = append(s.notes, note)
	return s, nil
}

// loadClients connects n sessions to the HTTP server and gives each its own sandbox.
func (b *bench) loadClients(ctx context.Context, h *httpServer, n int) ([]*loadClient, error) {
	clients := make([]*loadClient, n)
	for i := range clients {
		cs, err := newClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: newHTTPClient()},
			&mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
		if err != nil {
			return clients[:i], fmt.Errorf("client %d: %w\n%s", i, err, h.log.tail())
		}
		clients[i] = &loadClient{cs: cs}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			defer cancel()
			var res createResult
			if errs[i] = callTool(cctx, c.cs, "create_sandbox", b.createArgs(localstack.SandboxdPool), &res); errs[i] != nil {
				return
			}
			ip, err := b.ns.podIP(cctx, res.SandboxName)
			if errs[i] = err; err != nil {
				return
			}
			c.sandbox = sandbox{claim: res.SandboxClaimName, name: res.SandboxName, podIP: ip}
			c.direct, errs[i] = newSandboxdDirect(ip)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return clients, fmt.Errorf("client %d sandbox: %w", i, err)
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
