package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

const smallCommand = "echo hi"

// pacedInterval spaces the paced series' rounds so that the server makes at most 20 calls/s,
// well below the rate its Kubernetes client allows (kube.DefaultQPS) even if every call missed
// the cache.
const pacedInterval = 50 * time.Millisecond

// pyWrapped is how the server sends a shell command to the python runtime, as conn's Exec
// does at the time of writing (markedCommand): /bin/sh -c with a token as $1, exported to what
// the command starts (for killing their groups on timeout). It lets the bench show what that
// costs next to the plain request apart from the server itself.
func pyWrapped(cmd string) string {
	return "/bin/sh -c " + shQuote(`export "$1"; shift; `+cmd) + " sh K8S_SANDBOX_MCP_RUN=0123456789abcdef01234567"
}

type execResult struct {
	ExitCode         int    `json:"exit_code"`
	Stdout           string `json:"stdout"`
	Stderr           string `json:"stderr"`
	StdoutTotalChars int    `json:"stdout_total_chars"`
	StdoutTruncated  bool   `json:"stdout_truncated"`
}

// smallRuntime is item 1 for one runtime.
type smallRuntime struct {
	name                      string
	goal                      float64 // the median ratio to meet (issue 13)
	back, paced               comparison
	backHandler, pacedHandler series
	// transport compares, both called directly, the plain request with the one the server
	// actually makes (sandboxd: streaming Start instead of Execute; python: the sh wrapper).
	transport comparison
	extra     string
	inproc    breakdown
	// cpuPerCall is the server process's CPU time per call over the back-to-back series.
	cpuPerCall float64
	lean       *leanFigures // sandboxd only
}

func (b *bench) smallCommands(ctx context.Context) (*section, error) {
	s := &section{title: "1. Small command: execute_command over stdio against the runtime called directly",
		what: fmt.Sprintf("`%s`, one call at a time, in one sandbox per runtime: %d calls per side back to back, then %d "+
			"calls per side paced at one round per %v (at most 20 server calls/s), each after %d warm-up calls. sandboxd: "+
			"the server (stdio, `sandboxd-in-cluster`, pod IP) against a Go gRPC `Execute` of `/bin/sh -c '%s'` on the same "+
			"sandboxd. Python runtime: the server (stdio, `in-cluster`, pod IP) against a direct `POST /execute` on the same "+
			"runtime. sandboxd also against the leanest `execute_command` that can be built on mcp-go and grpc-go "+
			"(`bench/cmd/lean-exec-mcp`: one tool, one `Start` stream, the same structured answer, nothing else), %d calls "+
			"per side back to back, first against `Execute`, then against the server. Times are client-side round trips.",
			smallCommand, b.cfg.smallRuns, b.pacedRuns(), pacedInterval, b.cfg.warm, smallCommand, b.cfg.leanRuns)}
	lookups, err := b.measureLookups(ctx)
	if err != nil {
		return nil, err
	}
	floor, err := b.mcpFloor(ctx)
	if err != nil {
		return nil, err
	}
	var rts []smallRuntime
	for _, f := range []func(context.Context) (smallRuntime, error){b.smallSandboxd, b.smallPython} {
		r, err := f(ctx)
		if err != nil {
			return s, err
		}
		rts = append(rts, r)
	}
	var rounds, transports []comparison
	for _, r := range rts {
		rounds = append(rounds, r.back, r.paced)
		if r.lean != nil {
			rounds = append(rounds, r.lean.raw, r.lean.server)
		}
		transports = append(transports, r.transport)
	}
	s.comparisons("Round trip of one small command:", rounds...)
	s.comparisons("What MCP itself costs per call, same client, same run (baseline: a minimal mcp-go server over stdio with "+
		"one no-op tool; \"server\" column: the server's cheapest call that reaches its tools layer):", floor.comparison)
	s.comparisons("What the request the server makes costs by itself (both sides called directly, paced; baseline: the "+
		"plain request; \"server\" column: the request as the server sends it):", transports...)
	parts := table{caption: "Where the server's time goes, paced (handler time is the server's own `tool call` log line; " +
		"in process: the server's tools layer wired as main.go does, called without the stdio transport, with its " +
		"Kubernetes client and runtime connection timed from outside):", header: []string{"part"}}
	for _, r := range rts {
		parts.header = append(parts.header, r.name+" median", r.name+" p99")
	}
	addRow := func(name string, get func(smallRuntime) series) {
		row := []string{name}
		for _, r := range rts {
			row = append(row, fmtNum(get(r).median(), "ms"), fmtNum(get(r).p99(), "ms"))
		}
		parts.rows = append(parts.rows, row)
	}
	addRow("client round trip through the server (stdio)", func(r smallRuntime) series { return r.paced.subj })
	addRow("server handler (tool call log)", func(r smallRuntime) series { return r.pacedHandler })
	addRow("in process: whole tools/call", func(r smallRuntime) series { return r.inproc.total })
	addRow("in process: kube.Client.Get (claim and Sandbox lookup)", func(r smallRuntime) series { return r.inproc.get })
	addRow("in process: before conn.Exec (decoding, input check, binding, lookup)", func(r smallRuntime) series { return r.inproc.before })
	addRow("in process: conn.Exec (the runtime request)", func(r smallRuntime) series { return r.inproc.exec })
	addRow("in process: after conn.Exec (budget, result, logging, audit)", func(r smallRuntime) series { return r.inproc.after })
	addRow("GET SandboxClaim + GET Sandbox, plain client-go, unthrottled", func(smallRuntime) series { return lookups })
	addRow("the server's runtime request, called directly", func(r smallRuntime) series { return r.transport.subj })
	addRow("runtime called directly (baseline)", func(r smallRuntime) series { return r.paced.base })
	addRow("server handler, back-to-back series", func(r smallRuntime) series { return r.backHandler })
	cpu := []string{"server CPU time per call, back-to-back series (user + system, whole process)"}
	for _, r := range rts {
		cpu = append(cpu, fmtNum(r.cpuPerCall, "ms"), "")
	}
	parts.rows = append(parts.rows, cpu,
		// The floor's series is runtime-independent: the same figures under both runtimes.
		cpuRow("server CPU time per get_sandbox_status, MCP floor series (tools layer, no API request, no sandbox)", floor.serverCPU, len(rts)),
		cpuRow("minimal mcp-go server's CPU time per no-op call, MCP floor series", floor.minimalCPU, len(rts)))
	s.tables = append(s.tables, parts)
	for _, r := range rts {
		s.targets = append(s.targets, smallTarget(r, lookups, floor))
	}
	return s, nil
}

func (b *bench) pacedRuns() int { return max(b.cfg.smallRuns/2, 10) }

// smallP99Goal bounds the p99 ratio of both runtimes (issue 13).
const smallP99Goal = 1.5

// cpuRow is a table row of one CPU figure that holds for every runtime's column.
func cpuRow(name string, v float64, runtimes int) []string {
	row := []string{name}
	for range runtimes {
		row = append(row, fmtNum(v, "ms"), "")
	}
	return row
}

func smallTarget(r smallRuntime, lookups series, floor floorFigures) target {
	t := target{goal: fmt.Sprintf("small-command overhead ratio ≤ %.1f at the median, p99 ≤ %.1f, %s", r.goal, smallP99Goal, r.name),
		measured: fmt.Sprintf("%s back to back (%s vs %s, p99 %s), %s paced (p99 %s)", fmtRatio(r.back.ratio(0.5)),
			fmtNum(r.back.subj.median(), "ms"), fmtNum(r.back.base.median(), "ms"), fmtRatio(r.back.ratio(0.99)),
			fmtRatio(r.paced.ratio(0.5)), fmtRatio(r.paced.ratio(0.99))),
		met: r.back.ratio(0.5) <= r.goal && r.paced.ratio(0.5) <= r.goal &&
			r.back.ratio(0.99) <= smallP99Goal && r.paced.ratio(0.99) <= smallP99Goal,
		figures: []figure{{name: "ratio median, back to back", value: r.back.ratio(0.5)},
			{name: "ratio median, paced", value: r.paced.ratio(0.5)},
			{name: "ratio p99, back to back", value: r.back.ratio(0.99)},
			{name: "ratio p99, paced", value: r.paced.ratio(0.99)}}}
	t.figures = append(t.figures, figure{name: "handler p99 over its request's p99 sent directly, paced", value: tailRatio(r)})
	if r.lean != nil {
		t.figures = append(t.figures, figure{name: "leanest execute_command's ratio median, back to back", value: r.lean.raw.ratio(0.5)},
			figure{name: "server over the leanest execute_command, median, back to back", value: r.lean.server.ratio(0.5)})
	}
	if t.met {
		return t
	}
	in := r.inproc
	why := []string{fmt.Sprintf("Paced, the server adds %s per call (%s against %s). Of the round trip, %s is the tool "+
		"handler (its own log line, same calls) and %s MCP over stdio (JSON-RPC, input-schema validation, the structured "+
		"result serialised twice as structuredContent and its text fallback, two pipe hops).",
		fmtNum(r.paced.subj.median()-r.paced.base.median(), "ms"), fmtNum(r.paced.subj.median(), "ms"), fmtNum(r.paced.base.median(), "ms"),
		fmtNum(r.pacedHandler.median(), "ms"), fmtNum(r.paced.subj.median()-r.pacedHandler.median(), "ms")),
		fmt.Sprintf("Back to back the server adds %s; MCP itself costs %s per call in this run (the minimal mcp-go server's "+
			"no-op round trip), and the server's cheapest call, which reaches its tools layer but neither the API nor a "+
			"sandbox, %s: so %s of what it adds is the protocol's floor, %s the server's own code and its runtime request.",
			fmtNum(r.back.subj.median()-r.back.base.median(), "ms"), fmtNum(floor.base.median(), "ms"), fmtNum(floor.subj.median(), "ms"),
			fmtNum(min(floor.base.median(), r.back.subj.median()-r.back.base.median()), "ms"),
			fmtNum(max(0, r.back.subj.median()-r.back.base.median()-floor.base.median()), "ms")),
		fmt.Sprintf("Inside the handler, timed in process (a separate series of %s per call, each call split into parts): "+
			"before the runtime request %s (message decoding, input check, argument binding, and finding the claim and its "+
			"Sandbox: kube.Client.Get, %s), the runtime request (conn.Exec) %s, after it %s (output budget, result and its "+
			"serialisation, logging, the audit Event).",
			fmtNum(in.total.median(), "ms"), fmtNum(in.before.median(), "ms"), fmtNum(in.get.median(), "ms"),
			fmtNum(in.exec.median(), "ms"), fmtNum(in.after.median(), "ms"))}
	if added := r.paced.subj.median() - r.paced.base.median(); r.cpuPerCall < added/2 {
		why = append(why, fmt.Sprintf("The server process uses %s of CPU per call (back-to-back series), so most of "+
			"the %s it adds is waiting rather than work: each call crosses several goroutines (mcp-go's stdio reader "+
			"hands it to a worker, the runtime client has its own reader and writer goroutines), and every hand-off is a "+
			"wake-up that waits for a CPU on this shared two-core machine.", fmtNum(r.cpuPerCall, "ms"), fmtNum(added, "ms")))
	}
	// Whether kube.Client.Get reads the API server or a cache shows in its time: an API
	// round trip costs milliseconds here, a cache hit microseconds.
	fromAPI := in.get.median() >= 0.5
	if fromAPI {
		why = append(why, fmt.Sprintf("kube.Client.Get reads the API server on every call: a GET of the SandboxClaim "+
			"(owner check) and one of the Sandbox (address), %s together with plain client-go.", fmtNum(lookups.median(), "ms")))
	} else {
		why = append(why, "kube.Client.Get answers from memory (the server's watch cache), so no API request is made per call.")
	}
	if d := r.transport.subj.median() - r.transport.base.median(); d > 0.05 {
		why = append(why, fmt.Sprintf("The runtime request as the server makes it costs %s more than the plain one when "+
			"both are sent directly (second table): %s.", fmtNum(d, "ms"), r.extra))
	}
	why = append(why, smallBound(r, floor))
	if r.lean != nil {
		why = append(why, leanText(*r.lean, r.goal))
	}
	if tail := tailText(r); tail != "" {
		why = append(why, tail)
	}
	if fromAPI && r.backHandler.p99() > 1.5*r.pacedHandler.p99() {
		why = append(why, fmt.Sprintf("Back to back, the handler's p99 rises to %s (%s paced): the Kubernetes client's "+
			"rate limiter, one bucket of %d requests/s with a burst of %d (kube.DefaultQPS, kube.DefaultBurst); every "+
			"call that misses the cache takes two tokens, so once the burst is spent a caller is held to %d calls/s.",
			fmtNum(r.backHandler.p99(), "ms"), fmtNum(r.pacedHandler.p99(), "ms"), kube.DefaultQPS, kube.DefaultBurst, kube.DefaultQPS/2))
	}
	t.why = strings.Join(why, " ")
	return t
}

func (b *bench) smallSandboxd(ctx context.Context) (smallRuntime, error) {
	r := smallRuntime{name: "sandboxd", goal: 1.2, extra: "the server uses the streaming Start RPC, so that output is never held whole, " +
		"where a plain client uses unary Execute"}
	rt, err := b.sandboxd(ctx)
	if err != nil {
		return r, err
	}
	direct, err := newSandboxdDirect(rt.sandbox.podIP)
	if err != nil {
		return r, err
	}
	defer direct.close()
	execute := func(ctx context.Context) error {
		res, err := direct.execute(ctx, smallCommand)
		if err != nil {
			return err
		}
		if res.GetExitCode() != 0 || string(res.GetStdout()) != "hi\n" {
			return fmt.Errorf("%w: %+v", errMismatch, res)
		}
		return nil
	}
	start := func(ctx context.Context) error {
		n, err := direct.drain(ctx, smallCommand)
		if err == nil && n != 3 {
			err = fmt.Errorf("%w: %d bytes", errMismatch, n)
		}
		return err
	}
	if err := b.smallSeries(ctx, rt, execute, &r); err != nil {
		return r, err
	}
	r.back.name = "sandboxd: gRPC `Execute` vs `execute_command`, back to back"
	r.paced.name = "sandboxd: gRPC `Execute` vs `execute_command`, paced"
	bs, ss, err := interleavePaced(ctx, b.cfg.warm, b.pacedRuns(), pacedInterval, execute, start)
	if err != nil {
		return r, err
	}
	r.transport = comparison{name: "sandboxd: unary `Execute` vs streaming `Start`", unit: "ms", base: bs, subj: ss}
	lean, err := b.leanSandboxd(ctx, rt, execute)
	if err != nil {
		return r, err
	}
	r.lean = &lean
	r.inproc, err = b.inProcess(ctx, "SANDBOXD_POD_IP", localstack.SandboxdPool)
	return r, err
}

func (b *bench) smallPython(ctx context.Context) (smallRuntime, error) {
	r := smallRuntime{name: "python runtime", goal: 1.3, extra: "the runtime has no shell, so the server runs every command as " +
		"/bin/sh -c with a token as $0, exported to every process it starts, to be able to kill their groups on timeout " +
		"(no exec beyond the shell's)"}
	rt, err := b.python(ctx)
	if err != nil {
		return r, err
	}
	direct := newPythonDirect(rt.sandbox.podIP)
	plain := func(ctx context.Context) error { return pyCheck(direct.execute(ctx, smallCommand)) }
	if err := b.smallSeries(ctx, rt, plain, &r); err != nil {
		return r, err
	}
	r.back.name = "python runtime: `POST /execute` vs `execute_command`, back to back"
	r.paced.name = "python runtime: `POST /execute` vs `execute_command`, paced"
	wrappedCmd := pyWrapped(smallCommand)
	wrapped := func(ctx context.Context) error { return pyCheck(direct.execute(ctx, wrappedCmd)) }
	bs, ss, err := interleavePaced(ctx, b.cfg.warm, b.pacedRuns(), pacedInterval, plain, wrapped)
	if err != nil {
		return r, err
	}
	r.transport = comparison{name: "python runtime: plain command vs the server's sh wrapper", unit: "ms", base: bs, subj: ss}
	r.inproc, err = b.inProcess(ctx, "IN_CLUSTER_POD_IP", localstack.PythonPool)
	return r, err
}

// smallSeries runs the back-to-back and the paced series of base against execute_command.
func (b *bench) smallSeries(ctx context.Context, rt *runtimeUnderTest, base func(context.Context) error, r *smallRuntime) error {
	subj := b.serverSmall(rt)
	rt.srv.log.takeHandler("execute_command")
	stopProfile := rt.prof.collect(ctx)
	bs, ss, cpu, err := interleaveCPU(ctx, b.cfg.warm, b.cfg.smallRuns, base, subj, rt.srv.pid())
	stopProfile()
	if err != nil {
		return err
	}
	r.cpuPerCall = cpu[0]
	r.back, r.backHandler = comparison{unit: "ms", base: bs, subj: ss}, b.handlerTimes(rt)
	time.Sleep(2 * time.Second) // let the server's rate limiter refill its burst
	bs, ss, err = interleavePaced(ctx, b.cfg.warm, b.pacedRuns(), pacedInterval, base, subj)
	if err != nil {
		return err
	}
	r.paced, r.pacedHandler = comparison{unit: "ms", base: bs, subj: ss}, b.handlerTimes(rt)
	return nil
}

func pyCheck(res pyResult, err error) error {
	if err != nil {
		return err
	}
	if res.Stdout != "hi\n" {
		return fmt.Errorf("%w: %+v", errMismatch, res)
	}
	return nil
}

// serverSmall is one execute_command of the small command in rt's sandbox, checked.
func (b *bench) serverSmall(rt *runtimeUnderTest) func(context.Context) error {
	return smallCall(rt.srv.cs, b.claimArgs(rt.sandbox, map[string]any{"command": smallCommand}))
}

// smallCall is one execute_command of the small command through cs with args, checked.
func smallCall(cs *mcp.ClientSession, args map[string]any) func(context.Context) error {
	return func(ctx context.Context) error {
		var res execResult
		if err := callTool(ctx, cs, "execute_command", args, &res); err != nil {
			return err
		}
		if res.ExitCode != 0 || res.Stdout != "hi\n" {
			return fmt.Errorf("%w: %+v", errMismatch, res)
		}
		return nil
	}
}

// handlerTimes returns the measured calls' handler durations from the server's log,
// without the warm-up calls (the stderr copy may lag the last answer by a moment).
func (b *bench) handlerTimes(rt *runtimeUnderTest) series {
	time.Sleep(200 * time.Millisecond)
	h := rt.srv.log.takeHandler("execute_command")
	if len(h) > b.cfg.warm {
		h = h[b.cfg.warm:]
	}
	return h
}

// smallBound says what the back-to-back ratio would be if execute_command cost the server
// nothing beyond MCP itself, and nothing beyond its cheapest call: the runtime's own time, the
// request as the server sends it (its ratio to the plain request, from the directly sent
// series, applied to this series' runtime time) and the protocol's round trip are not the
// server's code to cut, so a goal below the first bound cannot be met by it. The parts come
// from separate series; when they add up to more than was measured, this run's noise is
// larger than what they would show, and the sentence says so instead.
func smallBound(r smallRuntime, floor floorFigures) string {
	base := r.back.base.median()
	request := max(0, base*(r.transport.ratio(0.5)-1))
	bound := func(mcp float64) float64 { return (base + request + mcp) / base }
	first, second, measured := bound(floor.base.median()), bound(floor.subj.median()), r.back.ratio(0.5)
	if second > measured {
		return fmt.Sprintf("No bound is drawn from this run: the runtime (%s), the request as the server sends it (%s "+
			"more, from the directly sent series) and the server's cheapest call (%s) add up to %s of the runtime, more "+
			"than the %s measured, so these separate series differ by more than their noise.", fmtNum(base, "ms"),
			fmtNum(request, "ms"), fmtNum(floor.subj.median(), "ms"), fmtRatio(second), fmtRatio(measured))
	}
	return fmt.Sprintf("Bounds, back to back: the runtime (%s) plus the request as the server sends it (%s more, from the "+
		"directly sent series) plus the MCP floor (%s) is %s of the runtime alone; with the server's cheapest call (%s) in "+
		"place of the floor, %s. Against the goal of %.1f, the first is what no server code can go below and the gap between "+
		"the second and the measured %s is execute_command's own part.", fmtNum(base, "ms"), fmtNum(request, "ms"),
		fmtNum(floor.base.median(), "ms"), fmtRatio(first), fmtNum(floor.subj.median(), "ms"), fmtRatio(second), r.goal,
		fmtRatio(measured))
}
