package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// DeleteResult is delete_sandbox's answer.
type DeleteResult struct {
	SandboxClaimName string `json:"sandbox_claim_name"`
	Namespace        string `json:"namespace"`
	Deleted          bool   `json:"deleted"`
}

func deleteTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("delete_sandbox",
		mcp.WithToolTitle("Delete a sandbox"),
		mcp.WithDescription("Deletes a sandbox, its pod and its files."),
		inputSchema(objectSchema([]string{"sandbox_claim_name"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(),
		})),
		outputSchema[DeleteResult](),
		hints(false, true, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a claimArgs
		if err := bind(req, &a); err != nil {
			return failure("delete the sandbox", claimRef{}, err), nil
		}
		ref, owner, err := d.caller(ctx, a)
		if err == nil {
			err = d.Claims.Delete(ctx, ref.Namespace, ref.Name, owner)
		}
		if err != nil {
			return failure("delete the sandbox", ref, err), nil
		}
		d.observe().SandboxDeleted()
		if d.Ports != nil {
			d.Ports.Forget(ref.Namespace, ref.Name)
		}
		return structured(DeleteResult{SandboxClaimName: ref.Name, Namespace: ref.Namespace, Deleted: true}), nil
	}}
}

// StatusResult is get_sandbox_status's answer.
type StatusResult struct {
	Status       string `json:"status" jsonschema:"SandboxReady, SandboxNotReady, SandboxSuspended or SandboxNotFound"`
	Ready        bool   `json:"ready"`
	Message      string `json:"message" jsonschema:"the Kubernetes Ready condition message, empty if none"`
	ShutdownTime string `json:"shutdown_time,omitempty" jsonschema:"RFC 3339 time of its automatic deletion; use renews it"`
	PodPhase     string `json:"pod_phase,omitempty" jsonschema:"its pod's phase (Pending, Running, Succeeded, Failed), when the pod could be read"`
	Reason       string `json:"reason,omitempty" jsonschema:"why the pod is not running, e.g. Evicted, CrashLoopBackOff, ImagePullBackOff, OOMKilled"`
	Restarts     int32  `json:"restarts,omitempty" jsonschema:"how often its main container was restarted"`
	// LastTermination is how the main container last ended, when it was restarted.
	LastTermination string `json:"last_termination,omitempty" jsonschema:"how its main container last ended, e.g. OOMKilled (exit code 137) at T"`
	Advice          string `json:"advice,omitempty" jsonschema:"what to do about the pod's state"`
}

// statusResult is what get_sandbox_status tells the model, with advice where the pod's state
// calls for some.
func statusResult(st kube.Status) StatusResult {
	r := StatusResult{Status: st.Status, Ready: st.Ready, Message: st.Message, ShutdownTime: rfc3339(st.ShutdownAt),
		PodPhase: st.Pod.Phase, Reason: st.Pod.Reason, Restarts: st.Pod.Restarts}
	if t := st.Pod.LastTermination; t != nil {
		r.LastTermination = t.String()
		if r.Reason == "" && !st.Ready {
			r.Reason = t.Reason
		}
	}
	if st.Pod.Message != "" && !strings.Contains(r.Message, st.Pod.Message) {
		r.Message = strings.TrimPrefix(r.Message+"; "+st.Pod.Message, "; ")
	}
	r.Advice = podAdvice(st.Pod)
	return r
}

func podAdvice(p kube.PodState) string {
	switch {
	case p.Terminal():
		return fmt.Sprintf("the sandbox's pod has ended (%s%s) and will not run again; its files went with it unless it has a volume: "+
			"delete it with delete_sandbox and create a new one", p.Phase, parenthesised(p.Reason))
	case p.Reason == "ImagePullBackOff" || p.Reason == "ErrImagePull" || p.Reason == "InvalidImageName":
		return "the node cannot get the image the pool's template names; waiting will not help: tell the operator, or use another warm pool"
	case p.LastTermination != nil && p.LastTermination.Reason == "OOMKilled":
		return fmt.Sprintf("its main process was killed for going over the memory limit (restarted %d times): processes it ran "+
			"are gone, and files outside a volume may be too; use less memory, or create a sandbox with a larger limit", p.Restarts)
	case p.Reason == "CrashLoopBackOff":
		return "its main container keeps ending and the kubelet restarts it with growing delays: if it does not become ready, " +
			"delete it with delete_sandbox and create a new one"
	}
	return ""
}

func parenthesised(s string) string {
	if s == "" {
		return ""
	}
	return ", " + s
}

func statusTool(d Deps) server.ServerTool {
	tool := mcp.NewTool("get_sandbox_status",
		mcp.WithToolTitle("Get sandbox status"),
		mcp.WithDescription("Whether a sandbox is ready: SandboxReady, SandboxNotReady, SandboxSuspended or SandboxNotFound."),
		inputSchema(objectSchema([]string{"sandbox_claim_name"}, map[string]prop{
			"sandbox_claim_name": claimProp(), "namespace": namespaceProp(),
		})),
		outputSchema[StatusResult](),
		hints(true, false, true),
	)
	return server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a claimArgs
		if err := bind(req, &a); err != nil {
			return failure("get the sandbox status", claimRef{}, err), nil
		}
		ref, owner, err := d.caller(ctx, a)
		if err != nil {
			return failure("get the sandbox status", ref, err), nil
		}
		st, err := d.Claims.Status(ctx, ref.Namespace, ref.Name, owner)
		if err != nil {
			return failure("get the sandbox status", ref, err), nil
		}
		st.Pod = d.Claims.PodState(ctx, ref.Namespace, ref.Name, owner)
		return structured(statusResult(st)), nil
	}}
}
