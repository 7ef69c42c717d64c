package tools

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn/proc"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/output"
)

// Offsets are byte positions in a process's two streams.
type Offsets struct {
	Stdout int64 `json:"stdout"`
	Stderr int64 `json:"stderr"`
}

type readProcArgs struct {
	claimArgs
	ProcessID      string  `json:"process_id"`
	Since          Offsets `json:"since"`
	MaxOutputChars *int    `json:"max_output_chars"`
	WaitSeconds    *int    `json:"wait_seconds"`
	Page           bool    `json:"page"`
}

// ProcessOutput is read_process_output's answer.
type ProcessOutput struct {
	ProcessID          string  `json:"process_id"`
	Running            bool    `json:"running"`
	ExitCode           *int    `json:"exit_code,omitempty" jsonschema:"how it ended (128+N: killed by signal N); absent while running"`
	Stdout             string  `json:"stdout"`
	Stderr             string  `json:"stderr"`
	StdoutTruncated    bool    `json:"stdout_truncated" jsonschema:"true when part of the new stdout is not shown"`
	StderrTruncated    bool    `json:"stderr_truncated" jsonschema:"true when part of the new stderr is not shown"`
	StdoutOmittedBytes int64   `json:"stdout_omitted_bytes" jsonschema:"bytes of new stdout not shown (page through them with since and page)"`
	StderrOmittedBytes int64   `json:"stderr_omitted_bytes" jsonschema:"bytes of new stderr not shown"`
	StdoutDroppedBytes int64   `json:"stdout_dropped_bytes" jsonschema:"stdout after since that the sandbox no longer keeps (beyond the output cap)"`
	StderrDroppedBytes int64   `json:"stderr_dropped_bytes" jsonschema:"stderr after since that the sandbox no longer keeps"`
	Next               Offsets `json:"next" jsonschema:"pass as since on the next call to get only newer output"`
	StdinClosed        bool    `json:"stdin_closed"`
	Note               string  `json:"note,omitempty"`
}

func offsetProp(stream string) prop {
	return prop{"type": "integer", "minimum": 0, "maximum": int64(1) << 50, "default": 0}
}

func readProcessTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("read_process_output",
		mcp.WithToolTitle("Read a process's output"),
		mcp.WithDescription("Returns a process's output after since (left out: from the start), whether it runs, and exit_code once ended."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "process_id"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(), "process_id": processIDProp(),
			"since": {"type": "object", "additionalProperties": false,
				"properties": map[string]prop{"stdout": offsetProp("stdout"), "stderr": offsetProp("stderr")}},
			"max_output_chars": budgetProp(),
			"wait_seconds":     intProp("", 0, maxWaitSeconds, 0),
			"page":             boolProp(""),
		})),
		outputSchema[ProcessOutput](),
		hints(true, false, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "read the process's output"
		var a readProcArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		c, ref, err := d.resolve(ctx, a.claimArgs)
		if err != nil {
			return failure(op, ref, err), nil
		}
		budget := intArg(a.MaxOutputChars, output.DefaultBudget)
		wait := seconds(a.WaitSeconds, 0)
		stop := d.tick(newProgress(ctx, req), func(elapsed time.Duration) string {
			return fmt.Sprintf("waiting for output of process %s: %ds of %ds", a.ProcessID, int(elapsed.Seconds()), int(wait.Seconds()))
		})
		o, err := d.procs().Read(ctx, target(c), proc.ReadRequest{ID: a.ProcessID, SinceStdout: a.Since.Stdout,
			SinceStderr: a.Since.Stderr, FetchBytes: output.FetchBytes(budget), Page: a.Page, Wait: wait})
		stop()
		if err != nil {
			return failure(op, processRef(ref, a.ProcessID), err), nil
		}
		return structured(processOutput(a, o, budget)), nil
	}}
}

func processOutput(a readProcArgs, o proc.Output, budget int) ProcessOutput {
	r := ProcessOutput{ProcessID: a.ProcessID, Running: o.Running, ExitCode: o.ExitCode, StdinClosed: o.StdinClosed,
		StdoutDroppedBytes: max(o.Stdout.Start-a.Since.Stdout, 0), StderrDroppedBytes: max(o.Stderr.Start-a.Since.Stderr, 0)}
	if a.Page {
		so, se := o.Stdout, o.Stderr
		var uo, ue int
		r.Stdout, r.Stderr, uo, ue = output.PageWindows(so.Window.Head, se.Window.Head,
			so.Start+int64(len(so.Window.Head)) >= so.End, se.Start+int64(len(se.Window.Head)) >= se.End, budget)
		r.Next = Offsets{Stdout: max(so.Start+int64(uo), a.Since.Stdout), Stderr: max(se.Start+int64(ue), a.Since.Stderr)}
		r.StdoutOmittedBytes, r.StderrOmittedBytes = max(so.End-r.Next.Stdout, 0), max(se.End-r.Next.Stderr, 0)
		r.StdoutTruncated, r.StderrTruncated = r.StdoutOmittedBytes > 0, r.StderrOmittedBytes > 0
		if r.StdoutTruncated || r.StderrTruncated {
			r.Note = "More output follows: call again with since = next and page: true for the next page."
		}
	} else {
		w := output.ApplyWindows(output.Window(o.Stdout.Window), output.Window(o.Stderr.Window), budget)
		r.Stdout, r.Stderr, r.StdoutTruncated, r.StderrTruncated = w.Stdout, w.Stderr, w.StdoutTruncated, w.StderrTruncated
		r.StdoutOmittedBytes, r.StderrOmittedBytes = w.StdoutOmittedBytes, w.StderrOmittedBytes
		r.Next = Offsets{Stdout: max(o.Stdout.End, a.Since.Stdout), Stderr: max(o.Stderr.End, a.Since.Stderr)}
		if r.StdoutTruncated || r.StderrTruncated {
			r.Note = fmt.Sprintf("The middle of the new output is not shown. To read it in order, call again with since "+
				"{\"stdout\": %d, \"stderr\": %d} and page: true.", o.Stdout.Start, o.Stderr.Start)
		}
	}
	if r.StdoutDroppedBytes > 0 || r.StderrDroppedBytes > 0 {
		r.Note = strings.TrimSpace(fmt.Sprintf("%d bytes of stdout and %d of stderr after since were dropped: the sandbox keeps only "+
			"the newest output of each stream (the operator's cap). %s", r.StdoutDroppedBytes, r.StderrDroppedBytes, r.Note))
	}
	return r
}

type writeProcArgs struct {
	claimArgs
	ProcessID string `json:"process_id"`
	Text      string `json:"text"`
	Base64    string `json:"base64"`
	Close     bool   `json:"close"`
}

// StdinResult is write_process_stdin's answer.
type StdinResult struct {
	ProcessID    string `json:"process_id"`
	BytesWritten int    `json:"bytes_written"`
	StdinClosed  bool   `json:"stdin_closed"`
}

func writeProcessTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("write_process_stdin",
		mcp.WithToolTitle("Type into a process"),
		mcp.WithDescription("Writes text (end a line with \"\\n\") or base64 bytes to a process's stdin; close=true then ends its input (Ctrl-D)."),
		inputSchema(objectSchema([]string{"sandbox_claim_name", "process_id"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(), "process_id": processIDProp(),
			"text":   {"type": "string", "maxLength": proc.MaxStdinBytes},
			"base64": {"type": "string", "maxLength": (proc.MaxStdinBytes + 2) / 3 * 4, "description": "Bytes in base64, instead of text."},
			"close":  boolProp(""),
		})),
		outputSchema[StdinResult](),
		hints(false, false, false),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "write to the process"
		var a writeProcArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		data, err := stdinData(a)
		if err != nil {
			return failure(op, claimRef{}, err), nil
		}
		c, ref, err := d.resolve(ctx, a.claimArgs)
		if err != nil {
			return failure(op, ref, err), nil
		}
		if err := d.procs().Write(ctx, target(c), a.ProcessID, data, a.Close); err != nil {
			return failure(op, processRef(ref, a.ProcessID), err), nil
		}
		return structured(StdinResult{ProcessID: a.ProcessID, BytesWritten: len(data), StdinClosed: a.Close}), nil
	}}
}

func stdinData(a writeProcArgs) ([]byte, error) {
	switch {
	case a.Text != "" && a.Base64 != "":
		return nil, badInput("pass text or base64, not both")
	case a.Base64 != "":
		b, err := base64.StdEncoding.DecodeString(a.Base64)
		if err != nil {
			return nil, badInput("base64 is not valid standard base64 (%v); encode the bytes again, or pass text", err)
		}
		if len(b) > proc.MaxStdinBytes {
			return nil, badInput("base64 holds %d bytes; at most %d per call: split the input", len(b), proc.MaxStdinBytes)
		}
		return b, nil
	case a.Text != "":
		if len(a.Text) > proc.MaxStdinBytes {
			return nil, badInput("text is %d bytes in UTF-8; at most %d per call: split the input", len(a.Text), proc.MaxStdinBytes)
		}
		return []byte(a.Text), nil
	case !a.Close:
		return nil, badInput("nothing to do: pass text or base64 to write, and/or close: true to close stdin")
	}
	return nil, nil
}
