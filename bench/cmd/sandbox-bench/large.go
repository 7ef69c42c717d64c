package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

func bigCommand(n int64) string { return fmt.Sprintf(`head -c %d /dev/zero | tr '\0' a`, n) }

// rssTarget is the bound on the server's peak RSS, whatever the output size.
const rssTarget = 64 << 20

// largeResult is one runtime and output size.
type largeResult struct {
	runtime  string
	size     int64
	idle     float64 // VmRSS before the series
	idleAnon float64 // RssAnon before the series
	idleFile float64 // RssFile before the series
	peaks    []memPeak
	wall     comparison
	maxTotal float64
	medTotal float64
	maxAnon  float64 // peak anonymous RSS (heap, stacks)
	medAnon  float64
}

func (b *bench) largeOutput(ctx context.Context) (*section, error) {
	s := &section{title: "2. Large output: peak RSS and wall time of execute_command",
		what: fmt.Sprintf("`%s` (and smaller sizes), %d runs per side and size after one warm-up run. The server gets "+
			"the default `max_output_chars` (30000), so it streams the output through its head/tail budget. Peak RSS is "+
			"VmHWM of the server process, reset through /proc/<pid>/clear_refs before each call; the anonymous part "+
			"(heap, stacks) is sampled every 5 ms. Each runtime gets a server process of its own, started for this item, "+
			"and the sizes run smallest first (Go keeps freed heap for a while). sandboxd baseline: a Go client draining the same command's output "+
			"from sandboxd's streaming `Start` RPC and discarding it. Python baseline: a direct `POST /execute` of "+
			"`sh -c '...'` whose JSON answer is decoded whole (the runtime only answers whole).",
			bigCommand(b.cfg.bigBytes[len(b.cfg.bigBytes)-1]), b.cfg.bigRuns)}
	var results []largeResult
	sbd, err := b.fresh(ctx, "SANDBOXD_POD_IP", localstack.SandboxdPool)
	if err != nil {
		return nil, err
	}
	defer sbd.srv.close()
	direct, err := newSandboxdDirect(sbd.sandbox.podIP)
	if err != nil {
		return nil, err
	}
	defer direct.close()
	for _, n := range b.cfg.bigBytes {
		cmd := bigCommand(n)
		base := func(ctx context.Context) error {
			got, err := direct.drain(ctx, cmd)
			if err == nil && got != n {
				err = fmt.Errorf("%w: drained %d bytes, want %d", errMismatch, got, n)
			}
			return err
		}
		r, err := b.largeRun(ctx, sbd, "sandboxd", n, base)
		if err != nil {
			return s, err
		}
		results = append(results, r)
	}
	py, err := b.fresh(ctx, "IN_CLUSTER_POD_IP", localstack.PythonPool)
	if err != nil {
		return s, err
	}
	defer py.srv.close()
	pdirect := newPythonDirect(py.sandbox.podIP)
	for _, n := range b.cfg.pyBigBytes {
		cmd := "sh -c " + shQuote(bigCommand(n))
		base := func(ctx context.Context) error {
			res, err := pdirect.execute(ctx, cmd)
			if err == nil && int64(len(res.Stdout)) != n {
				err = fmt.Errorf("%w: %d bytes, want %d", errMismatch, len(res.Stdout), n)
			}
			return err
		}
		r, err := b.largeRun(ctx, py, "python", n, base)
		if err != nil {
			return s, err
		}
		results = append(results, r)
	}
	rss := table{caption: "Server memory per call: peak RSS (VmHWM) and the peak of its anonymous part (heap, stacks); " +
		"the rest of RSS is the file-backed image of the binary, mapped from the page cache:",
		header: []string{"runtime", "output", "RSS before the series (file-backed + anonymous)", "peak RSS median", "peak RSS max",
			"peak anonymous median", "peak anonymous max", "peak RSS / output"}}
	var walls []comparison
	for _, r := range results {
		rss.rows = append(rss.rows, []string{r.runtime, fmtBytes(r.size),
			fmt.Sprintf("%s (%s + %s)", fmtNum(mib(r.idle), "MiB"), fmtNum(mib(r.idleFile), "MiB"), fmtNum(mib(r.idleAnon), "MiB")),
			fmtNum(mib(r.medTotal), "MiB"), fmtNum(mib(r.maxTotal), "MiB"), fmtNum(mib(r.medAnon), "MiB"), fmtNum(mib(r.maxAnon), "MiB"),
			fmt.Sprintf("%.3f", r.maxTotal/float64(r.size))})
		walls = append(walls, r.wall)
	}
	s.tables = append(s.tables, rss)
	s.comparisons("Wall time (baseline: the same output drained straight from the runtime):", walls...)
	for _, rt := range []string{"sandboxd", "python"} {
		s.targets = append(s.targets, largeTarget(rt, results))
	}
	return s, nil
}

// largeTarget judges "peak RSS under 64 MB whatever the output size" for one runtime, and
// says where the memory is when it is missed.
func largeTarget(rt string, results []largeResult) target {
	var mine []largeResult
	for _, r := range results {
		if r.runtime == rt {
			mine = append(mine, r)
		}
	}
	if len(mine) == 0 {
		return target{goal: "peak RSS < 64 MB whatever the output size, " + rt, measured: "not measured"}
	}
	var worst largeResult
	var sizes []string
	for _, r := range mine {
		if r.maxTotal >= worst.maxTotal {
			worst = r
		}
		sizes = append(sizes, fmtBytes(r.size))
	}
	first, last := mine[0], mine[len(mine)-1]
	t := target{goal: "peak RSS < 64 MB whatever the output size, " + rt,
		measured: fmt.Sprintf("max %s (anonymous part at most %s) over %s outputs", fmtNum(mib(worst.maxTotal), "MiB"),
			fmtNum(mib(maxAnon(mine)), "MiB"), strings.Join(sizes, ", ")),
		met: worst.maxTotal < rssTarget}
	if t.met {
		return t
	}
	perByte := (last.maxAnon - first.maxAnon) / float64(last.size-first.size)
	if perByte > 0.25 {
		t.why = fmt.Sprintf("Memory grows with the output: the anonymous part peaks at %s at %s and %s at %s (%.1f bytes "+
			"per additional output byte).", fmtNum(mib(first.maxAnon), "MiB"), fmtBytes(first.size),
			fmtNum(mib(last.maxAnon), "MiB"), fmtBytes(last.size), perByte)
		if rt == "python" {
			t.why += " The python runtime answers /execute with one JSON document holding the whole output (see the analysis, §2)."
		}
	} else {
		t.why = fmt.Sprintf("The output is streamed through the budget and never held: the anonymous part peaks at %s at "+
			"%s and %s at %s (%.2f bytes per additional output byte); what varies is garbage between collections and "+
			"chunks in flight (analysis §4).", fmtNum(mib(first.maxAnon), "MiB"), fmtBytes(first.size),
			fmtNum(mib(last.maxAnon), "MiB"), fmtBytes(last.size), perByte)
	}
	t.why += fmt.Sprintf(" Idle, the server already holds %s, %s of it the file-backed pages of its binary (item 5; "+
		"analysis §3), which leaves %s under the bound for everything else.", fmtNum(mib(first.idle), "MiB"),
		fmtNum(mib(first.idleFile), "MiB"), fmtNum(mib(rssTarget-first.idleFile), "MiB"))
	return t
}

func maxAnon(rs []largeResult) float64 {
	var m float64
	for _, r := range rs {
		m = max(m, r.maxAnon)
	}
	return m
}

func fmtBytes(n int64) string {
	if n >= 1e6 {
		return fmt.Sprintf("%g MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%d B", n)
}

// largeRun interleaves the baseline with execute_command of an n-byte output, recording the
// server's peak memory for every call.
func (b *bench) largeRun(ctx context.Context, rt *runtimeUnderTest, name string, n int64, base func(context.Context) error) (largeResult, error) {
	pid := rt.srv.pid()
	r := largeResult{runtime: name, size: n}
	var err error
	if r.idle, err = procStatus(pid, "VmRSS"); err != nil {
		return r, err
	}
	r.idleAnon, _ = procStatus(pid, "RssAnon")
	r.idleFile, _ = procStatus(pid, "RssFile")
	args := b.claimArgs(rt.sandbox, map[string]any{"command": bigCommand(n), "timeout": 600})
	subj := func(ctx context.Context) error {
		peak, err := measurePeak(pid, func() error {
			var res execResult
			if err := callTool(ctx, rt.srv.cs, "execute_command", args, &res); err != nil {
				return err
			}
			if res.ExitCode != 0 || int64(res.StdoutTotalChars) != n || !res.StdoutTruncated {
				return fmt.Errorf("%w: exit %d, %d chars, truncated %v", errMismatch, res.ExitCode, res.StdoutTotalChars, res.StdoutTruncated)
			}
			return nil
		})
		r.peaks = append(r.peaks, peak)
		return err
	}
	bs, ss, err := interleave(ctx, 1, b.cfg.bigRuns, base, subj)
	if err != nil {
		return r, fmt.Errorf("%s, %s output: %w", name, fmtBytes(n), err)
	}
	var totals, anons series
	for _, p := range r.peaks[1:] { // not the warm-up call
		totals, anons = append(totals, p.total), append(anons, p.anon)
	}
	r.medTotal, r.maxTotal = totals.median(), totals.quantile(1)
	r.medAnon, r.maxAnon = anons.median(), anons.quantile(1)
	r.wall = comparison{name: fmt.Sprintf("%s, %s output", name, fmtBytes(n)), unit: "ms", base: bs, subj: ss}
	return r, nil
}
