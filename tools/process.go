package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/proc"
)

// Process tools: a handle is (sandbox, process_id) and everything about the process lives in
// the sandbox (conn/proc), so any server process or replica serves any call.

// maxWaitSeconds stays a minute under the python runtime's own limit on one request
// (conn.PyRuntimeExecLimit), which a long poll is: the margin covers the read after the wait.
const maxWaitSeconds = int((conn.PyRuntimeExecLimit - time.Minute) / time.Second)

func processIDProp() prop {
	return prop{"type": "string", "minLength": 1, "maxLength": 63, "pattern": `^[a-z0-9][a-z0-9-]*$`}
}

type startArgs struct {
	claimArgs
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Cwd     string            `json:"cwd"`
	Env     map[string]string `json:"env"`
	Name    string            `json:"name"`
}

// ProcessInfo describes one process.
type ProcessInfo struct {
	ProcessID string   `json:"process_id"`
	Name      string   `json:"name,omitempty"`
	Command   string   `json:"command"`
	Args      []string `json:"args,omitempty"`
	Cwd       string   `json:"cwd,omitempty"`
	Started   string   `json:"started" jsonschema:"RFC 3339 time the process was started"`
	Running   bool     `json:"running"`
	ExitCode  *int     `json:"exit_code,omitempty" jsonschema:"how it ended (128+N: killed by signal N); absent while running"`
}

func processInfo(in proc.Info) ProcessInfo {
	return ProcessInfo{ProcessID: in.ID, Name: in.Name, Command: in.Command, Args: in.Args, Cwd: in.Cwd,
		Started: in.Started.Format(time.RFC3339), Running: in.Running, ExitCode: in.ExitCode}
}

func startProcessTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("start_process",
		mcp.WithToolTitle("Start a long-running process in a sandbox"),
		mcp.WithDescription("Starts a command in the background (/bin/sh -c, or with args a program without a shell) and returns its process_id at once. Use python -u, or output shows late."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "command"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(),
			"command": {"type": "string", "minLength": 1, "maxLength": maxCommandChars,
				"description": "Shell command; with args, the program."},
			"args": {"type": "array", "items": prop{"type": "string"}, "maxItems": maxArgv,
				"description": "Arguments; then no shell is used."},
			"cwd":  cwdProp(),
			"env":  envProp(),
			"name": {"type": "string", "maxLength": 100, "pattern": noControl, "description": "A label."},
		})),
		outputSchema[ProcessInfo](),
		hints(false, true, false),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "start the process"
		var a startArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		if strings.TrimSpace(a.Command) == "" {
			return failure(op, claimRef{}, badInput("command is required and must not be blank")), nil
		}
		if err := checkEnv(a.Env); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		c, ref, err := d.resolve(ctx, a.claimArgs)
		if err != nil {
			return failure(op, ref, err), nil
		}
		spec := proc.Spec{Cwd: a.Cwd, Env: a.Env, Name: a.Name}
		if a.Args != nil {
			spec.Argv = append([]string{a.Command}, a.Args...)
		} else {
			spec.Command = a.Command
		}
		info, err := d.procs().Start(ctx, target(c), spec)
		if err != nil {
			return failure(op, ref, err), nil
		}
		return structured(processInfo(info)), nil
	}}
}

type listProcArgs struct {
	claimArgs
}

// ProcessList is list_processes' answer.
type ProcessList struct {
	Processes []ProcessInfo `json:"processes"`
}

func listProcessesTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("list_processes",
		mcp.WithToolTitle("List a sandbox's processes"),
		mcp.WithDescription("Lists the processes: process_id, name, command, start time, running or how it exited."),
		inputSchema(objectSchema([]string{"sandbox_claim_name"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(),
		})),
		outputSchema[ProcessList](),
		hints(true, false, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "list the processes"
		var a listProcArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		c, ref, err := d.resolve(ctx, a.claimArgs)
		if err != nil {
			return failure(op, ref, err), nil
		}
		list, err := d.procs().List(ctx, target(c))
		if err != nil {
			return failure(op, ref, err), nil
		}
		out := ProcessList{Processes: make([]ProcessInfo, 0, len(list))}
		for _, p := range list {
			out.Processes = append(out.Processes, processInfo(p))
		}
		return structured(out), nil
	}}
}

type signalArgs struct {
	claimArgs
	ProcessID string `json:"process_id"`
	Signal    string `json:"signal"`
}

// SignalResult is signal_process's answer.
type SignalResult struct {
	ProcessID string `json:"process_id"`
	Signal    string `json:"signal"`
	Sent      bool   `json:"sent"`
}

func signalProcessTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("signal_process",
		mcp.WithToolTitle("Signal a process"),
		mcp.WithDescription("Signals a process and its group: TERM asks it to stop, INT is Ctrl-C, HUP reloads many servers, KILL kills at once."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "process_id"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(), "process_id": processIDProp(),
			"signal": {"type": "string", "enum": proc.Signals, "default": "TERM"},
		})),
		outputSchema[SignalResult](),
		hints(false, true, false),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "signal the process"
		var a signalArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		if a.Signal == "" {
			a.Signal = "TERM"
		}
		c, ref, err := d.resolve(ctx, a.claimArgs)
		if err != nil {
			return failure(op, ref, err), nil
		}
		if err := d.procs().Signal(ctx, target(c), a.ProcessID, a.Signal); err != nil {
			return failure(op, processRef(ref, a.ProcessID), err), nil
		}
		return structured(SignalResult{ProcessID: a.ProcessID, Signal: a.Signal, Sent: true}), nil
	}}
}

// processRef carries the process id into advice.
func processRef(ref claimRef, id string) claimRef {
	ref.Process = id
	return ref
}

// processAdvice explains the process errors; "" for any other error.
func processAdvice(op string, ref claimRef, err error) string {
	var ended *proc.EndedError
	switch {
	case errors.Is(err, proc.ErrNoProcess):
		return fmt.Sprintf("Could not %s: process %q is not found in sandbox %q. Call list_processes for the sandbox's processes; "+
			"processes end with their sandbox.", op, ref.Process, ref.Name)
	case errors.As(err, &ended):
		return fmt.Sprintf("Could not %s: process %q has ended with exit code %s. read_process_output still shows its output; "+
			"start_process runs it again.", op, ref.Process, ended.ExitCode)
	case errors.Is(err, proc.ErrStdinClosed):
		return fmt.Sprintf("Could not %s: the stdin of process %q was closed earlier and cannot be reopened. Start it again to give it new input.", op, ref.Process)
	case errors.Is(err, proc.ErrStdinBlocked):
		return fmt.Sprintf("Could not %s: process %q did not read its input within 10 s (a pipe holds 64 KiB). Check with "+
			"read_process_output that it is waiting for input, or send less at a time.", op, ref.Process)
	case errors.Is(err, proc.ErrNoCwd):
		return fmt.Sprintf("Could not %s: %v. Create it first (execute_command mkdir -p) or pass an existing directory.", op, err)
	case errors.Is(err, proc.ErrMissingTools):
		return fmt.Sprintf("Could not %s: %v. This sandbox's image cannot run background processes; use execute_command, "+
			"or a template whose image has coreutils and util-linux.", op, err)
	}
	return ""
}
