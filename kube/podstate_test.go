package kube

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStateOf(t *testing.T) {
	ended := metav1.NewTime(time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC))
	pod := func(status corev1.PodStatus) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}, {Name: "side"}}}, Status: status}
	}
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		want     PodState
		terminal bool
	}{
		{name: "running", pod: pod(corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "main"}}}),
			want: PodState{Phase: "Running"}},
		{name: "evicted", pod: pod(corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."}),
			want: PodState{Phase: "Failed", Reason: "Evicted", Message: "The node was low on resource: memory."}, terminal: true},
		{name: "restarted after an OOM kill, the main container's, not the sidecar's", pod: pod(corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "side", RestartCount: 9},
				{Name: "main", RestartCount: 2, LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, FinishedAt: ended}}},
			}}),
			want: PodState{Phase: "Running", Restarts: 2, LastTermination: &Termination{Reason: "OOMKilled", ExitCode: 137, At: ended.Time}}},
		{name: "crash loop", pod: pod(corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "main", RestartCount: 5,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}}}}}),
			want: PodState{Phase: "Running", Reason: "CrashLoopBackOff", Message: "back-off 40s", Restarts: 5}},
		{name: "creating is not a reason", pod: pod(corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "main",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}),
			want: PodState{Phase: "Pending"}},
		{name: "an image that cannot be pulled", pod: pod(corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "main",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}}),
			want: PodState{Phase: "Pending", Reason: "ImagePullBackOff", Message: "Back-off pulling image"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := stateOf(tc.pod)
			if got.Phase != tc.want.Phase || got.Reason != tc.want.Reason || got.Message != tc.want.Message || got.Restarts != tc.want.Restarts ||
				(got.LastTermination == nil) != (tc.want.LastTermination == nil) ||
				(got.LastTermination != nil && *got.LastTermination != *tc.want.LastTermination) {
				t.Errorf("stateOf = %+v, want %+v", got, tc.want)
			}
			if got.Terminal() != tc.terminal {
				t.Errorf("Terminal() = %v", got.Terminal())
			}
		})
	}
}
