package tools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// A suspended sandbox keeps its Sandbox object and persistent volume but has no pod: the
// calls that need one are refused (errSuspended) or, with AutoResume, resume it first.
var (
	errSuspended = errors.New("the sandbox is suspended")
	errResume    = errors.New("resuming the sandbox")
)

// What a suspension loses, for the model. Process state (conn/proc) lives in the sandbox's
// temporary directory, not on the volume, so there is nothing to mark ended: it is gone.
const (
	suspendLoses = "Its pod is deleted: every running process (start_process, background jobs) is killed and list_processes " +
		"will show none of them after resume_sandbox, and every file that is not on the sandbox's persistent volume " +
		"(create_sandbox's volume_size, mounted at volume_path) is lost."
	lifetimeRuns   = " Its lifetime keeps running: it is still deleted at its shutdown time, suspended or not."
	lifetimePaused = " Its lifetime is paused: the time it had left starts again when it is resumed."
	// lifetimeCapRuns follows lifetimePaused under a hard cap (kube.WithSuspendPausesLifetime).
	lifetimeCapRuns = " The server's maximum lifetime (%d s from creation) does not pause: it is deleted then, suspended or not."
	resumedNote     = "The sandbox runs in a new pod: processes from before the suspension are gone, and only files on its " +
		"persistent volume (volume_path) were kept."
)

// SuspendResult is suspend_sandbox's answer.
type SuspendResult struct {
	SandboxClaimName string `json:"sandbox_claim_name"`
	Namespace        string `json:"namespace"`
	Suspended        bool   `json:"suspended"`
	Status           string `json:"status" jsonschema:"the controller's progress: PodTerminated once the pod is gone, PodTerminating while it stops"`
	VolumePath       string `json:"volume_path,omitempty" jsonschema:"where the persistent volume, which survives, is mounted; absent: the sandbox has none and keeps no files"`
	Note             string `json:"note" jsonschema:"what the suspension lost and how its lifetime counts"`
}

// ResumeResult is resume_sandbox's answer.
type ResumeResult struct {
	SandboxClaimName string   `json:"sandbox_claim_name"`
	Namespace        string   `json:"namespace"`
	SandboxName      string   `json:"sandbox_name"`
	PodIPs           []string `json:"pod_ips" jsonschema:"the new pod's addresses"`
	ServiceFQDN      string   `json:"service_fqdn,omitempty" jsonschema:"the sandbox's in-cluster DNS name, if it has a Service"`
	VolumePath       string   `json:"volume_path,omitempty" jsonschema:"where the persistent volume is mounted"`
	ShutdownTime     string   `json:"shutdown_time,omitempty" jsonschema:"RFC 3339 time at which the sandbox is deleted automatically"`
	Note             string   `json:"note"`
}

func suspendTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("suspend_sandbox",
		mcp.WithToolTitle("Suspend a sandbox"),
		mcp.WithDescription("Deletes the sandbox's pod (no CPU or memory used), keeping the sandbox for resume_sandbox. Processes end; only files on its persistent volume survive."),
		inputSchema(objectSchema([]string{"sandbox_claim_name"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(),
		})),
		outputSchema[SuspendResult](),
		hints(false, true, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "suspend the sandbox"
		var a claimArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		ref, owner, err := d.caller(ctx, a)
		if err != nil {
			return failure(op, ref, err), nil
		}
		// Get first: ownership, and where the volume is, which the note names.
		c, err := d.Claims.Get(ctx, ref.Namespace, ref.Name, owner)
		if err != nil {
			return failure(op, ref, err), nil
		}
		st, err := d.Claims.Suspend(ctx, ref.Namespace, ref.Name, owner)
		if err != nil {
			return failure(op, ref, err), nil
		}
		note := suspendLoses + lifetimeRuns
		if d.SuspendPausesLifetime {
			note = suspendLoses + lifetimePaused
			if d.MaxLifetime > 0 {
				note += fmt.Sprintf(lifetimeCapRuns, int(d.MaxLifetime/time.Second))
			}
		}
		if c.VolumePath == "" {
			note += " This sandbox has no persistent volume: none of its files are kept."
		}
		return structured(SuspendResult{SandboxClaimName: ref.Name, Namespace: ref.Namespace, Suspended: true,
			Status: st.Message, VolumePath: c.VolumePath, Note: note}), nil
	}}
}

type resumeArgs struct {
	claimArgs
	SandboxReadyTimeout *int `json:"sandbox_ready_timeout"`
}

func resumeTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("resume_sandbox",
		mcp.WithToolTitle("Resume a suspended sandbox"),
		mcp.WithDescription("Starts a suspended sandbox again and waits until it is ready; only files on its persistent volume survived."),
		inputSchema(objectSchema([]string{"sandbox_claim_name"}, map[string]prop{
			"sandbox_claim_name":    claimProp(),
			"namespace":             namespaceProp(),
			"sandbox_ready_timeout": intProp("", minTimeout, maxTimeout, defaultReadyTimeout),
		})),
		outputSchema[ResumeResult](),
		hints(false, false, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		const op = "resume the sandbox"
		var a resumeArgs
		if err := bind(req, &a); err != nil {
			return failure(op, claimRef{}, err), nil
		}
		ref, owner, err := d.caller(ctx, a.claimArgs)
		if err != nil {
			return failure(op, ref, err), nil
		}
		p := newProgress(ctx, req)
		defer p.finish()
		c, err := d.Claims.Resume(ctx, ref.Namespace, ref.Name, owner, seconds(a.SandboxReadyTimeout, defaultReadyTimeout), p.send)
		if err != nil {
			return failure(op, ref, fmt.Errorf("%w: %w", errResume, err)), nil
		}
		res := ResumeResult{SandboxClaimName: c.Name, Namespace: c.Namespace, SandboxName: c.SandboxName, PodIPs: c.PodIPs,
			ServiceFQDN: c.ServiceFQDN, VolumePath: c.VolumePath, Note: resumedNote}
		if res.PodIPs == nil {
			res.PodIPs = []string{}
		}
		if !c.ShutdownAt.IsZero() {
			res.ShutdownTime = c.ShutdownAt.UTC().Format(time.RFC3339)
		}
		return structured(res), nil
	}}
}

// suspendAdvice is advice for a call on a suspended sandbox, or a resume that timed out; ""
// otherwise. advice asks it before the generic timeout advice, which speaks of a create.
func suspendAdvice(op string, ref claimRef, err error) string {
	switch {
	case errors.Is(err, errSuspended):
		return fmt.Sprintf("Could not %s: sandbox %q is suspended; call resume_sandbox first, then retry. It starts a new pod: "+
			"processes from before the suspension are gone, files on its persistent volume are kept.", op, ref.Name)
	case errors.Is(err, errResume) && errors.Is(err, kube.ErrTimeout):
		return fmt.Sprintf("Could not %s: %v. The sandbox is kept and its pod may still come up: check get_sandbox_status, "+
			"or call resume_sandbox again with a larger sandbox_ready_timeout.", op, err)
	}
	return ""
}
