package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
)

// PodState is what the kubelet says of a sandbox's pod. The Sandbox's Ready condition only says
// "not ready"; a model told why (an eviction, a main process killed for memory, an image that
// cannot be pulled) knows whether waiting helps or a new sandbox is needed.
type PodState struct {
	Phase string // Pending, Running, Succeeded, Failed, Unknown; "": the pod was not read
	// Reason is the pod's own (Evicted, ...), else its first container's waiting reason
	// (CrashLoopBackOff, ImagePullBackOff, ...); Message goes with it.
	Reason, Message string
	Restarts        int32
	// LastTermination is the first container's last end, when it was restarted: its reason
	// (OOMKilled, Error, ...), exit code and time.
	LastTermination *Termination
}

// Termination is how a container ended.
type Termination struct {
	Reason   string
	ExitCode int32
	At       time.Time
}

// Terminal says whether the pod is gone for good: the kubelet does not restart a Failed or
// Succeeded pod, and the sandbox will not be ready again.
func (p PodState) Terminal() bool {
	return p.Phase == string(corev1.PodFailed) || p.Phase == string(corev1.PodSucceeded)
}

// PodState reads the pod of the owner's sandbox: one API read, which Status (polled while a
// command runs) does not make. A pod that cannot be read (no RBAC for pods, not created yet,
// the sandbox suspended) gives the zero PodState: the status then says what the Sandbox says.
func (c *Client) PodState(ctx context.Context, namespace, name, owner string) PodState {
	_, sb, err := c.claimAndSandbox(ctx, namespace, name, owner)
	if err != nil || c.pods == nil || sb == nil || sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended {
		return PodState{}
	}
	for _, name := range podNames(sb) {
		pod, err := c.pods.Pods(sb.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			return stateOf(pod)
		}
	}
	return PodState{}
}

func stateOf(pod *corev1.Pod) PodState {
	st := PodState{Phase: string(pod.Status.Phase), Reason: pod.Status.Reason, Message: pod.Status.Message}
	if len(pod.Status.ContainerStatuses) == 0 {
		return st
	}
	cs := pod.Status.ContainerStatuses[0]
	for _, other := range pod.Status.ContainerStatuses {
		if other.Name == pod.Spec.Containers[0].Name {
			cs = other
		}
	}
	st.Restarts = cs.RestartCount
	if w := cs.State.Waiting; w != nil && st.Reason == "" && w.Reason != "ContainerCreating" {
		st.Reason, st.Message = w.Reason, w.Message
	}
	if t := cs.State.Terminated; t != nil && st.Reason == "" {
		st.Reason, st.Message = t.Reason, t.Message
	}
	if t := cs.LastTerminationState.Terminated; t != nil {
		st.LastTermination = &Termination{Reason: t.Reason, ExitCode: t.ExitCode, At: t.FinishedAt.Time}
	}
	return st
}

// String is the termination as a model reads it.
func (t Termination) String() string {
	s := fmt.Sprintf("%s (exit code %d)", t.Reason, t.ExitCode)
	if !t.At.IsZero() {
		s += " at " + t.At.UTC().Format(time.RFC3339)
	}
	return s
}
