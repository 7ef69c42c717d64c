package tools

import (
	"strings"
	"testing"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// Issue 43.8: get_sandbox_status says why a pod is not running, and what to do.
func TestStatusResultSaysWhyAndWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		name       string
		st         kube.Status
		wantReason string
		wantAdvice string // "" for none
	}{
		{name: "ready", st: kube.Status{Status: kube.StatusReady, Ready: true, Pod: kube.PodState{Phase: "Running"}}},
		{name: "evicted", st: kube.Status{Status: "SandboxNotReady", Message: "Pod exists with phase: Failed",
			Pod: kube.PodState{Phase: "Failed", Reason: "Evicted", Message: "The node was low on resource: memory."}},
			wantReason: "Evicted", wantAdvice: "has ended (Failed, Evicted) and will not run again"},
		{name: "OOM-killed and restarted, ready again", st: kube.Status{Status: kube.StatusReady, Ready: true,
			Pod: kube.PodState{Phase: "Running", Restarts: 1, LastTermination: &kube.Termination{Reason: "OOMKilled", ExitCode: 137}}},
			wantAdvice: "killed for going over the memory limit (restarted 1 times)"},
		{name: "OOM-killed, not ready yet", st: kube.Status{Status: "SandboxNotReady",
			Pod: kube.PodState{Phase: "Running", Restarts: 1, LastTermination: &kube.Termination{Reason: "OOMKilled", ExitCode: 137}}},
			wantReason: "OOMKilled", wantAdvice: "memory limit"},
		{name: "image", st: kube.Status{Status: "SandboxNotReady", Pod: kube.PodState{Phase: "Pending", Reason: "ImagePullBackOff"}},
			wantReason: "ImagePullBackOff", wantAdvice: "cannot get the image"},
		{name: "pod not readable", st: kube.Status{Status: "SandboxNotReady", Message: "Pod exists with phase: Pending"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := statusResult(tc.st)
			if r.Reason != tc.wantReason || (tc.wantAdvice == "") != (r.Advice == "") || !strings.Contains(r.Advice, tc.wantAdvice) {
				t.Errorf("statusResult = %+v, want reason %q and advice with %q", r, tc.wantReason, tc.wantAdvice)
			}
		})
	}
}
