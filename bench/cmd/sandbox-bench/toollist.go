package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"time"
)

// Tool-list budgets of issue 31: what a model reads before it does anything.
const (
	toolListBudget    = 24 << 10 // tools/list with every tool, at default settings
	modelFacingBudget = 16 << 10 // its descriptions and input schemas
)

// toolListSize (item 10): the bytes of tools/list as the wire carries them, per toolset and
// with every tool, next to kubernetes-mcp-server's default tool list.
func (b *bench) toolListSize(ctx context.Context) (*section, error) {
	s := &section{title: "10. The tool list: what a model reads before it does anything",
		what: "`tools/list` over stdio as the wire carries it (compact JSON of the result's tools, read from the raw JSON-RPC " +
			"answer, not re-encoded), and the instructions of `initialize`. Tokens by a stated rule: bytes ÷ 4 (the usual rule " +
			"of thumb for English text; JSON schemas break into more, smaller tokens, so this is a floor). The server at " +
			"default settings with each `--toolsets` value; the baseline is kubernetes-mcp-server's default tool list (npm " +
			"`kubernetes-mcp-server-linux-amd64@" + b.cfg.kmsVersion + "`, on the same kubeconfig)."}
	env, err := b.serverEnv("SANDBOXD_POD_IP")
	if err != nil {
		return nil, err
	}
	tbl := table{caption: "Sizes (bytes; tokens ≈ bytes ÷ 4):", header: []string{"server", "tools", "descriptions", "input schemas",
		"output schemas", "tools/list", "≈ tokens", "instructions"}}
	row := func(name string, l toolList) {
		tbl.rows = append(tbl.rows, []string{name, fmt.Sprint(l.tools), fmt.Sprint(l.desc), fmt.Sprint(l.input), fmt.Sprint(l.output),
			fmt.Sprint(l.total), fmt.Sprint(l.total / 4), fmt.Sprint(l.instructions)})
	}
	var all toolList
	for _, set := range []string{"all", "sandbox", "exec", "files", "workspace", "process", "ports", "metrics", "sandbox,exec,files"} {
		l, err := rawToolList(ctx, b.cfg.server, env, "--toolsets", set)
		if err != nil {
			return s, fmt.Errorf("--toolsets %s: %w", set, err)
		}
		if set == "all" {
			all = l
			row("k8s-sandbox-mcp (every tool, the default)", l)
			continue
		}
		row("k8s-sandbox-mcp --toolsets "+set, l)
	}
	if l, err := rawToolList(ctx, b.cfg.server, env, "--read-only"); err == nil {
		row("k8s-sandbox-mcp --read-only", l)
	} else {
		return s, err
	}
	var kms toolList
	if b.cfg.kms != "" {
		if kms, err = rawToolList(ctx, b.cfg.kms, env, "--kubeconfig", b.stack.Kubeconfig); err != nil {
			return s, fmt.Errorf("kubernetes-mcp-server: %w", err)
		}
		row("kubernetes-mcp-server (default toolsets)", kms)
	}
	s.tables = append(s.tables, tbl)
	t := target{goal: fmt.Sprintf("tools/list with every tool ≤ %d KB, descriptions + input schemas ≤ %d KB", toolListBudget>>10, modelFacingBudget>>10),
		measured: fmt.Sprintf("%d bytes, of which descriptions + input schemas %d", all.total, all.desc+all.input),
		met:      all.total <= toolListBudget && all.desc+all.input <= modelFacingBudget,
		figures: []figure{{name: "tools/list bytes, every tool", value: float64(all.total), unit: "B"},
			{name: "descriptions + input schemas", value: float64(all.desc + all.input), unit: "B"}}}
	if kms.total > 0 {
		t.figures = append(t.figures, figure{name: "over kubernetes-mcp-server's", value: float64(all.total) / float64(kms.total)})
	}
	if !t.met {
		t.why = "Input schemas are most of it: every argument's type, bounds, format and pattern stay in the schema that validates " +
			"it; output schemas (for clients, not models) are the next part. See the table per toolset."
	}
	s.targets = append(s.targets, t)
	return s, nil
}

type toolList struct {
	tools, desc, input, output, total, instructions int
}

// rawToolList starts bin over stdio, initializes, and measures tools/list's raw answer.
func rawToolList(ctx context.Context, bin string, env []string, args ...string) (toolList, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		return toolList{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return toolList{}, err
	}
	rec := &logRecorder{}
	cmd.Stderr = rec
	if err := cmd.Start(); err != nil {
		return toolList{}, err
	}
	defer func() { _ = in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	r := bufio.NewReaderSize(out, 1<<20)
	send := func(msg string) error { _, err := io.WriteString(in, msg+"\n"); return err }
	answer := func(id int) (json.RawMessage, error) {
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return nil, fmt.Errorf("reading the answer to %d: %w\n%s", id, err, rec.tail())
			}
			var m struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(line, &m) != nil || m.ID == nil || *m.ID != id {
				continue // a notification or log line
			}
			if m.Error != nil {
				return nil, fmt.Errorf("request %d: %s", id, m.Error)
			}
			return m.Result, nil
		}
	}
	if err := send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + protocolVersion +
		`","capabilities":{},"clientInfo":{"name":"sandbox-bench","version":"0"}}}`); err != nil {
		return toolList{}, err
	}
	init, err := answer(1)
	if err != nil {
		return toolList{}, err
	}
	var ir struct {
		Instructions string `json:"instructions"`
	}
	_ = json.Unmarshal(init, &ir)
	if err := send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return toolList{}, err
	}
	if err := send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); err != nil {
		return toolList{}, err
	}
	res, err := answer(2)
	if err != nil {
		return toolList{}, err
	}
	var tr struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(res, &tr); err != nil {
		return toolList{}, err
	}
	l := toolList{tools: len(tr.Tools), instructions: len(ir.Instructions)}
	for _, t := range tr.Tools {
		l.total += compact(t)
		var parts map[string]json.RawMessage
		if err := json.Unmarshal(t, &parts); err != nil {
			return toolList{}, err
		}
		var d string
		_ = json.Unmarshal(parts["description"], &d)
		l.desc += len(d)
		l.input += compact(parts["inputSchema"])
		l.output += compact(parts["outputSchema"])
	}
	l.total += len(tr.Tools) - 1 + len(`{"tools":[]}`) // the commas and the envelope
	return l, nil
}

// compact is the size of raw as compact JSON (what mcp-go and most servers write).
func compact(raw json.RawMessage) int {
	if len(raw) == 0 {
		return 0
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return len(raw)
	}
	return b.Len()
}
