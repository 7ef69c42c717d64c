package main

import (
	"context"
	"fmt"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/localstack"
)

// workbenchBytes is the finished log read back in item 7, workbenchFiles the tree searched.
const (
	workbenchBytes = 200_000_000
	workbenchFiles = 100_000
)

// workbenchMemory (item 7): reading a long process log and searching a large tree cost the
// server no more memory than one execute_command with a large output.
func (b *bench) workbenchMemory(ctx context.Context) (*section, error) {
	s := &section{title: "7. Workbench tools: memory against execute_command",
		what: fmt.Sprintf("In one sandboxd sandbox, from a server process started for this item, over stdio, peak RSS (VmHWM, "+
			"reset before each call) and its sampled anonymous part per call, every call at the largest budget (300000 "+
			"characters). Reference: `execute_command` printing %d bytes. Then a `start_process` that printed %d bytes and "+
			"ended: `read_process_output` from the start (head and tail), and 5 pages of it; `search_files` for one line among %d files, and "+
			"by glob alone.", workbenchBytes, workbenchBytes, workbenchFiles)}
	rt, err := b.fresh(ctx, "SANDBOXD_POD_IP", localstack.SandboxdPool)
	if err != nil {
		return nil, err
	}
	defer rt.srv.close()
	pid := rt.srv.pid()
	call := func(tool string, args map[string]any) (map[string]any, memPeak, error) {
		var sc map[string]any
		p, err := measurePeak(pid, func() error {
			res, err := callToolResult(ctx, rt.srv.cs, tool, b.claimArgs(rt.sandbox, args))
			if err == nil {
				sc, _ = res.StructuredContent.(map[string]any)
			}
			return err
		})
		return sc, p, err
	}
	printCmd := fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a", workbenchBytes)
	mem := table{caption: "Memory per call:", header: []string{"call", "server: peak RSS", "server: peak anonymous"}}
	row := func(name string, p memPeak) {
		mem.rows = append(mem.rows, []string{name, fmtNum(mib(p.total), "MiB"), fmtNum(mib(p.anon), "MiB")})
	}
	_, ref, err := call("execute_command", map[string]any{"command": printCmd, "timeout": 600, "max_output_chars": 300000})
	if err != nil {
		return s, err
	}
	row(fmt.Sprintf("execute_command printing %d bytes (reference)", workbenchBytes), ref)

	started, _, err := call("start_process", map[string]any{"command": printCmd})
	if err != nil {
		return s, err
	}
	id, _ := started["process_id"].(string)
	deadline := time.Now().Add(10 * time.Minute)
	for {
		o, _, err := call("read_process_output", map[string]any{"process_id": id, "wait_seconds": 30, "max_output_chars": 128,
			"since": map[string]any{"stdout": workbenchBytes}})
		if err != nil {
			return s, err
		}
		if running, _ := o["running"].(bool); !running {
			break
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("the process printing %d bytes did not end", workbenchBytes)
		}
	}
	var worst memPeak
	_, p, err := call("read_process_output", map[string]any{"process_id": id, "max_output_chars": 300000})
	if err != nil {
		return s, err
	}
	row("read_process_output of the finished log, head and tail", p)
	worst = maxPeak(worst, p)
	since := 0.0
	for range 5 {
		o, p, err := call("read_process_output", map[string]any{"process_id": id, "page": true, "max_output_chars": 300000,
			"since": map[string]any{"stdout": since}})
		if err != nil {
			return s, err
		}
		next, _ := o["next"].(map[string]any)
		since, _ = next["stdout"].(float64)
		worst = maxPeak(worst, p)
	}
	row("read_process_output, worst of 5 pages", worst)

	mk := fmt.Sprintf("rm -rf bench-tree && mkdir -p bench-tree && cd bench-tree && seq %d | xargs touch && echo needle > 77777", workbenchFiles)
	if _, _, err := call("execute_command", map[string]any{"command": mk, "timeout": 600}); err != nil {
		return s, err
	}
	found, p, err := call("search_files", map[string]any{"path": "bench-tree", "pattern": "needle", "timeout": 600})
	if err != nil {
		return s, err
	}
	if total, _ := found["total"].(float64); total != 1 {
		return s, fmt.Errorf("%w: search found %v lines, want 1", errMismatch, found["total"])
	}
	row(fmt.Sprintf("search_files for a line among %d files", workbenchFiles), p)
	worst = maxPeak(worst, p)
	globbed, p, err := call("search_files", map[string]any{"path": "bench-tree", "glob": "*7*", "timeout": 600})
	if err != nil {
		return s, err
	}
	row(fmt.Sprintf("search_files by glob among %d files (%v found, %v returned)", workbenchFiles, globbed["total"], len(asSlice(globbed["matches"]))), p)
	worst = maxPeak(worst, p)
	s.tables = append(s.tables, mem)

	// "The same memory bound": no workbench call above the reference's peak plus the slack
	// garbage-collection timing gives, nor above item 2's bound.
	const slack, bound = 8 << 20, 64 << 20
	t := target{goal: "workbench reads and searches within execute_command's memory bound",
		measured: fmt.Sprintf("worst peak RSS %s, execute_command %s", fmtNum(mib(worst.total), "MiB"), fmtNum(mib(ref.total), "MiB")),
		met:      worst.total <= max(ref.total+slack, 0) && worst.total < bound,
		figures:  []figure{{name: "worst peak RSS minus execute_command's", value: mib(worst.total - ref.total), unit: "MiB"}}}
	if !t.met {
		t.why = "A workbench call held more than execute_command does: see the table for which."
	}
	s.targets = append(s.targets, t)
	return s, nil
}

func maxPeak(a, b memPeak) memPeak {
	return memPeak{total: max(a.total, b.total), anon: max(a.anon, b.anon)}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
