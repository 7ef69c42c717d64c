package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

func everything() labels.Selector { return labels.Everything() }

// syncPod writes the pids annotation and the pod status as a kubelet would.
func (a *agent) syncPod(ctx context.Context, p *corev1.Pod, r *podRuntime) error {
	states := make([]daemonState, 0, len(r.daemons))
	for _, d := range r.daemons {
		states = append(states, d.state())
	}
	if want := pidsValue(states); p.Annotations[pidsAnnotation] != want {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"annotations": map[string]string{pidsAnnotation: want}}})
		if err != nil {
			return fmt.Errorf("pids patch: %w", err)
		}
		// The patched pod carries the resourceVersion the status update below needs.
		if p, err = a.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch,
			metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("annotate pids: %w", err)
		}
	}
	status := podStatus(p, r.ip(), metav1.NewTime(r.started.Truncate(time.Second)), states)
	if equality.Semantic.DeepEqual(status, p.Status) {
		return nil
	}
	upd := p.DeepCopy()
	upd.Status = status
	if _, err := a.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status: %w", err)
	}
	return nil
}

// pidsValue is "sandboxd=<pid>,python=<pid>" for the daemons that run now.
func pidsValue(states []daemonState) string {
	var parts []string
	for _, s := range states {
		if s.pid > 0 {
			parts = append(parts, s.name+"="+strconv.Itoa(s.pid))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// podStatus derives the status a kubelet would report: phase Running once every daemon has
// started; Ready and ContainersReady once every daemon answers its probe.
func podStatus(p *corev1.Pod, ip string, started metav1.Time, states []daemonState) corev1.PodStatus {
	allStarted, allReady := true, true
	var restarts int32
	var lastStart time.Time
	var lastExit *exitInfo
	for _, s := range states {
		allStarted = allStarted && s.pid > 0
		allReady = allReady && s.ready
		restarts += s.restarts
		if s.started.After(lastStart) {
			lastStart = s.started
		}
		if s.lastExit != nil && (lastExit == nil || s.lastExit.finished.After(lastExit.finished)) {
			lastExit = s.lastExit
		}
	}
	st := p.Status.DeepCopy()
	st.Phase = corev1.PodPending
	if allStarted || restarts > 0 {
		st.Phase = corev1.PodRunning
	}
	st.HostIP, st.HostIPs = "127.0.0.1", []corev1.HostIP{{IP: "127.0.0.1"}}
	st.PodIP, st.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	st.StartTime = &started
	st.Reason, st.Message = "", ""
	boolStatus := func(b bool) corev1.ConditionStatus {
		if b {
			return corev1.ConditionTrue
		}
		return corev1.ConditionFalse
	}
	for _, c := range []struct {
		t  corev1.PodConditionType
		ok bool
	}{
		{corev1.PodReadyToStartContainers, true}, {corev1.PodInitialized, true},
		{corev1.PodScheduled, true}, {corev1.ContainersReady, allReady}, {corev1.PodReady, allReady},
	} {
		setCondition(st, c.t, boolStatus(c.ok), started)
	}
	st.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "localstack://" + c.Image,
			ContainerID: "localstack://" + string(p.UID) + "/" + c.Name, Ready: allReady,
			Started: ptr(allStarted), RestartCount: restarts}
		if allStarted {
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(lastStart.Truncate(time.Second))}
		} else {
			reason := "ContainerCreating"
			if restarts > 0 {
				reason = "CrashLoopBackOff"
			}
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason}
		}
		if lastExit != nil {
			cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: int32(lastExit.code),
				Reason: lastExit.reason, StartedAt: metav1.NewTime(lastExit.started.Truncate(time.Second)),
				FinishedAt: metav1.NewTime(lastExit.finished.Truncate(time.Second))}
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	return *st
}

// setCondition sets a pod condition, moving lastTransitionTime only when the status changes.
func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, s corev1.ConditionStatus, started metav1.Time) {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != s {
			c.Status, c.LastTransitionTime = s, now
		}
		c.Reason, c.Message = "", ""
		return
	}
	when := now
	if s == corev1.ConditionTrue && t != corev1.PodReady && t != corev1.ContainersReady {
		when = started
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: when})
}

func ptr[T any](v T) *T { return &v }
