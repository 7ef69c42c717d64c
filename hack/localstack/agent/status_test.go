package main

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodStatus(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}}}
	now := time.Now()
	started := metav1.NewTime(now)
	tests := []struct {
		name      string
		states    []daemonState
		phase     corev1.PodPhase
		ready     bool
		restarts  int32
		running   bool
		lastTerm  bool
		waitingAs string
	}{
		{"starting", []daemonState{{name: "sandboxd"}}, corev1.PodPending, false, 0, false, false, "ContainerCreating"},
		{"started, not answering yet", []daemonState{{name: "sandboxd", pid: 10, started: now}}, corev1.PodRunning, false, 0, true, false, ""},
		{"all ready", []daemonState{{name: "sandboxd", pid: 10, ready: true, started: now}, {name: "python", pid: 11, ready: true, started: now}},
			corev1.PodRunning, true, 0, true, false, ""},
		{"one of two ready", []daemonState{{name: "sandboxd", pid: 10, ready: true, started: now}, {name: "python", pid: 11, started: now}},
			corev1.PodRunning, false, 0, true, false, ""},
		{"crashed and down", []daemonState{{name: "sandboxd", restarts: 1, lastExit: &exitInfo{code: 137, reason: "Error", finished: now}}},
			corev1.PodRunning, false, 1, false, true, "CrashLoopBackOff"},
		{"restarted and ready", []daemonState{{name: "sandboxd", pid: 12, ready: true, restarts: 2, started: now, lastExit: &exitInfo{code: 137, finished: now}}},
			corev1.PodRunning, true, 2, true, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := podStatus(pod, "127.0.0.9", started, tt.states)
			if st.Phase != tt.phase || st.PodIP != "127.0.0.9" || len(st.PodIPs) != 1 || st.PodIPs[0].IP != "127.0.0.9" || st.HostIP != "127.0.0.1" {
				t.Errorf("phase %s podIP %s podIPs %v hostIP %s", st.Phase, st.PodIP, st.PodIPs, st.HostIP)
			}
			for _, c := range st.Conditions {
				want := corev1.ConditionTrue
				if (c.Type == corev1.PodReady || c.Type == corev1.ContainersReady) && !tt.ready {
					want = corev1.ConditionFalse
				}
				if c.Status != want {
					t.Errorf("condition %s = %s, want %s", c.Type, c.Status, want)
				}
			}
			if len(st.Conditions) != 5 {
				t.Errorf("%d conditions", len(st.Conditions))
			}
			cs := st.ContainerStatuses[0]
			if cs.Ready != tt.ready || cs.RestartCount != tt.restarts || (cs.State.Running != nil) != tt.running ||
				(cs.LastTerminationState.Terminated != nil) != tt.lastTerm {
				t.Errorf("container status %+v", cs)
			}
			if tt.waitingAs != "" && (cs.State.Waiting == nil || cs.State.Waiting.Reason != tt.waitingAs) {
				t.Errorf("waiting %+v, want %s", cs.State.Waiting, tt.waitingAs)
			}
		})
	}
}

func TestSetConditionKeepsTransitionTimeWhenUnchanged(t *testing.T) {
	old := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	st := &corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: old}}}
	setCondition(st, corev1.PodReady, corev1.ConditionTrue, old)
	if !st.Conditions[0].LastTransitionTime.Equal(&old) {
		t.Error("unchanged status moved lastTransitionTime")
	}
	setCondition(st, corev1.PodReady, corev1.ConditionFalse, old)
	if st.Conditions[0].LastTransitionTime.Equal(&old) || st.Conditions[0].Status != corev1.ConditionFalse {
		t.Errorf("changed status: %+v", st.Conditions[0])
	}
}

func TestPidsValue(t *testing.T) {
	tests := []struct {
		states []daemonState
		want   string
	}{
		{nil, ""},
		{[]daemonState{{name: "sandboxd", pid: 5}}, "sandboxd=5"},
		{[]daemonState{{name: "sandboxd", pid: 5}, {name: "python", pid: 6}}, "python=6,sandboxd=5"},
		{[]daemonState{{name: "sandboxd", pid: 0}, {name: "python", pid: 6}}, "python=6"},
	}
	for _, tt := range tests {
		if got := pidsValue(tt.states); got != tt.want {
			t.Errorf("pidsValue(%v) = %q, want %q", tt.states, got, tt.want)
		}
	}
}
