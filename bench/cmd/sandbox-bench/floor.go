package main

import (
	"context"
	"fmt"
)

// mcpFloor measures what MCP itself costs per call in this run: the minimal mcp-go server's
// no-op tool over stdio, with the same client, against the server's cheapest call that does
// reach its tools layer (get_sandbox_status of a claim the watch cache holds: no API request,
// no sandbox). The first is the protocol's floor; the gap to the second is the server's own
// code on the way of every call. Each process's CPU time over the series is taken too: the
// round trips include waiting for a CPU, the CPU time per call does not.
func (b *bench) mcpFloor(ctx context.Context) (floorFigures, error) {
	var f floorFigures
	c := comparison{name: "MCP floor: minimal mcp-go no-op `tools/call` vs the server's `get_sandbox_status` (watch cache, " +
		"no API request), back to back", unit: "ms"}
	rt, err := b.sandboxd(ctx)
	if err != nil {
		return f, err
	}
	env, err := b.serverEnv("SANDBOXD_POD_IP")
	if err != nil {
		return f, err
	}
	minimal, err := startStdio(ctx, b.cfg.minimal, env)
	if err != nil {
		return f, err
	}
	defer minimal.close()
	noop := func(ctx context.Context) error {
		res, err := callToolResult(ctx, minimal.cs, "echo", map[string]any{"text": "hi"})
		if err == nil && len(res.Content) != 1 {
			err = fmt.Errorf("%w: echo returned %d contents", errMismatch, len(res.Content))
		}
		return err
	}
	args := b.claimArgs(rt.sandbox, nil)
	status := func(ctx context.Context) error {
		var res struct {
			Status string `json:"status"`
		}
		if err := callTool(ctx, rt.srv.cs, "get_sandbox_status", args, &res); err != nil {
			return err
		}
		if res.Status != "SandboxReady" {
			return fmt.Errorf("%w: status %q", errMismatch, res.Status)
		}
		return nil
	}
	var cpu []float64
	c.base, c.subj, cpu, err = interleaveCPU(ctx, b.cfg.warm, b.cfg.smallRuns, noop, status, minimal.pid(), rt.srv.pid())
	if err != nil {
		return f, err
	}
	return floorFigures{comparison: c, minimalCPU: cpu[0], serverCPU: cpu[1]}, nil
}

// floorFigures are the MCP floor's round trips and both processes' CPU time per call (ms).
type floorFigures struct {
	comparison
	minimalCPU, serverCPU float64
}
