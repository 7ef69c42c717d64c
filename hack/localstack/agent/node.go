package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// registerNode creates (or refreshes) the one Node every pod is bound to and marks it Ready.
// No node lifecycle controller runs in this stack, so a single status write is enough.
func registerNode(ctx context.Context, c kubernetes.Interface, cfg config) error {
	nodes := c.CoreV1().Nodes()
	n, err := nodes.Get(ctx, cfg.nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		n, err = nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: cfg.nodeName, Labels: map[string]string{
			"kubernetes.io/hostname": cfg.nodeName, "kubernetes.io/os": runtime.GOOS, "kubernetes.io/arch": runtime.GOARCH,
		}}}, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("register node: %w", err)
	}
	now := metav1.NewTime(time.Now())
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(fmt.Sprint(runtime.NumCPU())),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse(fmt.Sprint(lastIP - firstIP + 1)),
	}
	n.Status = corev1.NodeStatus{
		Capacity: capacity, Allocatable: capacity, Phase: corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			Reason: "KubeletReady", Message: "localstack node agent is posting ready status",
			LastHeartbeatTime: now, LastTransitionTime: now}},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
			{Type: corev1.NodeHostName, Address: cfg.nodeName}},
		NodeInfo: corev1.NodeSystemInfo{KubeletVersion: cfg.kubeVersion, OperatingSystem: runtime.GOOS,
			Architecture: runtime.GOARCH, ContainerRuntimeVersion: "localstack://host-processes"},
	}
	if _, err := nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node status: %w", err)
	}
	return nil
}
