package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/bench/load"
)

// listMax is list_files' default max_entries.
const listMax = 1000

func (b *bench) listLarge(ctx context.Context) (*section, error) {
	s := &section{title: "6. list_files on a large directory against a direct REST listing",
		what: fmt.Sprintf("Directories of %s empty files in a sandboxd sandbox (made with `seq N | xargs touch`). "+
			"%d listings per side and directory after one warm-up, interleaved. Server: `list_files` with the default "+
			"`max_entries` (%d) over stdio, from a server process started for this item; its peak RSS is VmHWM, reset "+
			"before each call, and the peak of its anonymous part (heap, stacks) is sampled every 5 ms. Baseline: `GET /v1/files/<dir>` "+
			"on the same sandboxd, the body read and decoded whole as a simple client does; its memory is the bytes this "+
			"Go process allocated for it.", joinInts(b.cfg.listFiles), b.cfg.listRuns, listMax)}
	rt, err := b.fresh(ctx, "SANDBOXD_POD_IP", localstack.SandboxdPool)
	if err != nil {
		return nil, err
	}
	defer rt.srv.close()
	direct, err := newSandboxdDirect(rt.sandbox.podIP)
	if err != nil {
		return nil, err
	}
	defer direct.close()
	mem := table{caption: "Memory:", header: []string{"entries", "listing body", "direct client: allocated per listing",
		"server: RSS before", "server: peak RSS median", "server: peak RSS max", "server: peak anonymous median",
		"server: peak anonymous max"}}
	var times []comparison
	var peakAnon []float64
	for _, n := range b.cfg.listFiles {
		dir := fmt.Sprintf("bench-list-%d", n)
		if _, err := direct.execute(ctx, fmt.Sprintf("rm -rf %s && mkdir %s && cd %s && seq %d | xargs touch", dir, dir, dir, n)); err != nil {
			return s, fmt.Errorf("make %s: %w", dir, err)
		}
		var body, alloc int64
		base := func(ctx context.Context) error {
			got, bytes, a, err := direct.list(ctx, dir)
			if err == nil && got != n {
				err = fmt.Errorf("%w: %d entries, want %d", errMismatch, got, n)
			}
			body, alloc = bytes, max(alloc, a)
			return err
		}
		pid := rt.srv.pid()
		idle, err := load.ProcStatus(pid, "VmRSS")
		if err != nil {
			return s, err
		}
		var peaks []memPeak
		args := b.claimArgs(rt.sandbox, map[string]any{"path": dir})
		subj := func(ctx context.Context) error {
			p, err := measurePeak(pid, func() error {
				// The structured result is checked as the client library decoded it: a second
				// decoding into structs would add client time to the server's side.
				res, err := callToolResult(ctx, rt.srv.cs, "list_files", args)
				if err != nil {
					return err
				}
				sc, _ := res.StructuredContent.(map[string]any)
				entries, _ := sc["entries"].([]any)
				total, _ := sc["total_entries"].(float64)
				if int(total) != n || len(entries) != min(n, listMax) {
					return fmt.Errorf("%w: %d of %v entries", errMismatch, len(entries), sc["total_entries"])
				}
				return nil
			})
			peaks = append(peaks, p)
			return err
		}
		bs, ss, err := interleave(ctx, 1, b.cfg.listRuns, base, subj)
		if err != nil {
			return s, fmt.Errorf("%d entries: %w", n, err)
		}
		var totals, anons series
		for _, p := range peaks[1:] {
			totals, anons = append(totals, p.total), append(anons, p.anon)
		}
		mem.rows = append(mem.rows, []string{fmt.Sprint(n), fmtNum(mib(float64(body)), "MiB"), fmtNum(mib(float64(alloc)), "MiB"),
			fmtNum(mib(idle), "MiB"), fmtNum(mib(totals.median()), "MiB"), fmtNum(mib(totals.quantile(1)), "MiB"),
			fmtNum(mib(anons.median()), "MiB"), fmtNum(mib(anons.quantile(1)), "MiB")})
		times = append(times, comparison{name: fmt.Sprintf("%d entries", n), unit: "ms", base: bs, subj: ss})
		peakAnon = append(peakAnon, anons.quantile(1))
	}
	s.comparisons("Time:", times...)
	s.tables = append(s.tables, mem)
	if len(peakAnon) < 2 {
		return s, nil
	}
	small, large := peakAnon[0], peakAnon[len(peakAnon)-1]
	first, last := b.cfg.listFiles[0], b.cfg.listFiles[len(b.cfg.listFiles)-1]
	// "Independent of directory size": the anonymous peak may not grow by more than a small
	// slack (garbage-collection timing) across a 100-fold larger directory.
	const slack = 8 << 20
	t := target{goal: "list memory independent of directory size",
		measured: fmt.Sprintf("peak anonymous RSS %s at %d entries, %s at %d", fmtNum(mib(small), "MiB"), first,
			fmtNum(mib(large), "MiB"), last),
		met:     large-small <= slack,
		figures: []figure{{name: "peak anonymous growth", value: mib(large - small), unit: "MiB"}}}
	if !t.met {
		t.why = fmt.Sprintf("The peak grows by %s from %d to %d entries although only %d entries are kept: while it "+
			"decodes sandboxd's JSON entry by entry (conn.decodeSandboxdListing), each entry is garbage at once, and the "+
			"heap grows with the bytes decoded between two garbage collections.", fmtNum(mib(large-small), "MiB"), first, last, listMax)
	}
	s.targets = append(s.targets, t)
	return s, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, " and ")
}
