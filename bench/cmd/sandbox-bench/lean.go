package main

import (
	"context"
	"fmt"
	"net"
)

// leanFigures compare item 1's sandboxd series with the leanest execute_command built on the
// same libraries (bench/cmd/lean-exec-mcp): against the runtime called directly, what MCP and
// a gRPC stream cost at the least; against the server, what the server's own code adds.
type leanFigures struct {
	raw    comparison // gRPC Execute vs the lean server
	server comparison // the lean server vs the server
	// CPU time per call of each process over the second series.
	leanCPU, serverCPU float64
}

// leanSandboxd runs both series back to back, each interleaved, on rt's sandbox.
func (b *bench) leanSandboxd(ctx context.Context, rt *runtimeUnderTest, execute func(context.Context) error) (leanFigures, error) {
	var f leanFigures
	lean, err := startStdio(ctx, b.cfg.lean, []string{"LEAN_EXEC_SANDBOXD=" + net.JoinHostPort(rt.sandbox.podIP, "9090")})
	if err != nil {
		return f, err
	}
	defer lean.close()
	leanCall := smallCall(lean.cs, map[string]any{"command": smallCommand})
	f.raw = comparison{name: "sandboxd: gRPC `Execute` vs the leanest `execute_command` (lean-exec-mcp), back to back", unit: "ms"}
	if f.raw.base, f.raw.subj, err = interleave(ctx, b.cfg.warm, b.cfg.leanRuns, execute, leanCall); err != nil {
		return f, err
	}
	f.server = comparison{name: "sandboxd: the leanest `execute_command` (lean-exec-mcp) vs the server's, back to back", unit: "ms"}
	var cpu []float64
	f.server.base, f.server.subj, cpu, err = interleaveCPU(ctx, b.cfg.warm, b.cfg.leanRuns, leanCall, b.serverSmall(rt),
		lean.pid(), rt.srv.pid())
	if err != nil {
		return f, err
	}
	f.leanCPU, f.serverCPU = cpu[0], cpu[1]
	return f, nil
}

// leanText says what the lean server shows about a missed sandboxd goal: whether a server
// built on mcp-go and grpc-go can meet it at all here, and what the server adds to that.
func leanText(f leanFigures, goal float64) string {
	lean := f.raw.ratio(0.5)
	s := fmt.Sprintf("The leanest execute_command on the same libraries (lean-exec-mcp: mcp-go over stdio, one Start "+
		"stream with the server's gRPC settings, the same structured answer; no settings, input check, output budget, "+
		"logging, metrics or audit) is %s of gRPC Execute back to back (%s against %s), and the server %s of it (%s more "+
		"per call; CPU per call %s against %s).", fmtRatio(lean), fmtNum(f.raw.subj.median(), "ms"),
		fmtNum(f.raw.base.median(), "ms"), fmtRatio(f.server.ratio(0.5)),
		fmtNum(f.server.subj.median()-f.server.base.median(), "ms"), fmtNum(f.serverCPU, "ms"), fmtNum(f.leanCPU, "ms"))
	if lean > goal {
		s += fmt.Sprintf(" So in this run no execute_command built on mcp-go and grpc-go met the goal of %.1f; the "+
			"server's own code is the second ratio.", goal)
	}
	return s
}
