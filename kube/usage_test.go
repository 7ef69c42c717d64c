package kube

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
)

func TestUsage(t *testing.T) {
	limited := func(cpu, mem string) corev1.Container {
		c := corev1.Container{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{}}}
		if cpu != "" {
			c.Resources.Limits[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			c.Resources.Limits[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return c
	}
	podMetrics := &metricsv1beta1.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "warm-pod"},
		Timestamp:  metav1.NewTime(testNow), Window: metav1.Duration{Duration: 15 * time.Second},
		Containers: []metricsv1beta1.ContainerMetrics{
			{Name: "a", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("100Mi")}},
			{Name: "b", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5m"), corev1.ResourceMemory: resource.MustParse("4Mi")}},
		},
	}
	notServed := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource"}}
	// The pod has the Sandbox's name (agent-sandbox v1.0); a legacy annotation may name another.
	tests := []struct {
		name       string
		annotation string // the Sandbox's legacy pod-name annotation
		measured   string // the pod metrics-server has figures for
		containers []corev1.Container
		reactErr   error
		want       Usage
		wantErr    string
	}{
		{name: "measured", measured: "sb", containers: []corev1.Container{limited("1", "512Mi"), limited("100m", "32Mi")},
			want: Usage{Pod: "sb", CPULimitMillis: 1100, MemoryLimitBytes: 544 << 20, Measured: true, CPUMillis: 255,
				MemoryBytes: 104 << 20, MeasuredAt: testNow, Window: 15 * time.Second}},
		{name: "annotated, pod by the Sandbox's name", annotation: "warm-pod", measured: "sb", containers: []corev1.Container{limited("1", "512Mi")},
			want: Usage{Pod: "sb", CPULimitMillis: 1000, MemoryLimitBytes: 512 << 20, Measured: true, CPUMillis: 255,
				MemoryBytes: 104 << 20, MeasuredAt: testNow, Window: 15 * time.Second}},
		{name: "legacy pod by the annotation", annotation: "warm-pod", measured: "warm-pod", containers: []corev1.Container{limited("1", "512Mi")},
			want: Usage{Pod: "warm-pod", CPULimitMillis: 1000, MemoryLimitBytes: 512 << 20, Measured: true, CPUMillis: 255,
				MemoryBytes: 104 << 20, MeasuredAt: testNow, Window: 15 * time.Second}},
		{name: "one container unlimited", measured: "sb", containers: []corev1.Container{limited("1", "512Mi"), limited("", "32Mi")},
			want: Usage{Pod: "sb", MemoryLimitBytes: 544 << 20, Measured: true, CPUMillis: 255, MemoryBytes: 104 << 20,
				MeasuredAt: testNow, Window: 15 * time.Second}},
		{name: "not scraped yet", annotation: "warm-pod", containers: []corev1.Container{limited("1", "1Gi")},
			want: Usage{Pod: "sb", CPULimitMillis: 1000, MemoryLimitBytes: 1 << 30}, wantErr: "not been measured yet"},
		{name: "no metrics-server", reactErr: notServed, want: Usage{Pod: "sb"}, wantErr: "not served by this cluster"},
		{name: "forbidden", reactErr: apierrors.NewForbidden(schema.GroupResource{Group: "metrics.k8s.io", Resource: "pods"}, "sb", errors.New("no")),
			want: Usage{Pod: "sb"}, wantErr: "(RBAC)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := sandboxObj(testNS, "sb", "", []string{"10.0.0.8"}, cond("Ready", metav1.ConditionTrue, "DependenciesReady", ""))
			if tt.annotation != "" {
				sb.Annotations = map[string]string{podNameAnnotation: tt.annotation}
			}
			sb.Spec.PodTemplate.Spec.Containers = tt.containers
			f := newFakes(t, claimObj(testNS, "c", ownedBy(testOwner), readyStatus("sb", "10.0.0.8")), sb)
			m := metricsfake.NewSimpleClientset()
			m.PrependReactor("get", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if tt.reactErr != nil {
					return true, nil, tt.reactErr
				}
				if name := a.(clienttesting.GetAction).GetName(); name != tt.measured {
					return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "metrics.k8s.io", Resource: "pods"}, name)
				}
				return true, podMetrics, nil
			})
			f.c.metrics = m
			got, err := f.c.Usage(t.Context(), testNS, "c", testOwner)
			if err != nil {
				t.Fatal(err)
			}
			if got.Claim.Name != "c" || !got.Claim.Ready {
				t.Errorf("claim %+v", got.Claim)
			}
			if (got.MetricsErr == nil) != (tt.wantErr == "") || got.MetricsErr != nil && (!strings.Contains(got.MetricsErr.Error(), tt.wantErr) || !errors.Is(got.MetricsErr, ErrNoMetrics)) {
				t.Errorf("metrics error %v, want one with %q", got.MetricsErr, tt.wantErr)
			}
			got.Claim, got.MetricsErr = Claim{}, nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Error(jsonDiff(got, tt.want))
			}
		})
	}
	t.Run("foreign claim", func(t *testing.T) {
		f := newFakes(t, claimObj(testNS, "c", ownedBy("someone-else"), readyStatus("sb")))
		if _, err := f.c.Usage(t.Context(), testNS, "c", testOwner); !errors.Is(err, ErrNotFound) {
			t.Errorf("err %v, want not found", err)
		}
	})
}
