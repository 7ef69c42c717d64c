package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
)

// ErrNoMetrics means metrics.k8s.io had no figures for the pod: the API is not served (no
// metrics-server), the caller may not read it, or the pod is too new to have been scraped.
var ErrNoMetrics = errors.New("no figures from metrics.k8s.io")

// errPodNotMeasured: metrics.k8s.io has no pod of that name (yet).
var errPodNotMeasured = fmt.Errorf("%w: the pod has not been measured yet (metrics-server scrapes every 15 s or so)", ErrNoMetrics)

// podNameAnnotation is where agent-sandbox before v1.0 named the pod of an adopted (warm)
// Sandbox; v1.0 deprecates it (a Sandbox's pod has the Sandbox's name) but may still honour it.
const podNameAnnotation = sandboxv1beta1.SandboxPodNameAnnotation

// Usage is what the API knows of what one sandbox consumes.
type Usage struct {
	Claim Claim
	Pod   string
	// Limits of the pod's containers from the Sandbox's pod template; 0: unlimited.
	CPULimitMillis, MemoryLimitBytes int64
	// Measured is false when metrics.k8s.io had nothing (MetricsErr says why).
	Measured    bool
	CPUMillis   int64
	MemoryBytes int64
	MeasuredAt  time.Time
	Window      time.Duration
	MetricsErr  error
}

// Usage returns the owner's claim with its pod's limits and, when metrics.k8s.io serves them,
// its CPU and memory (the sum over containers, as `kubectl top pod` shows).
func (c *Client) Usage(ctx context.Context, namespace, name, owner string) (Usage, error) {
	obj, sb, err := c.claimAndSandbox(ctx, namespace, name, owner)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Claim: claimFromObject(obj)}
	u.Claim.Ready = false
	fillFromSandbox(&u.Claim, sb)
	if sb == nil {
		u.MetricsErr = fmt.Errorf("%w: the sandbox has no pod", ErrNoMetrics)
		return u, nil
	}
	u.CPULimitMillis, u.MemoryLimitBytes = limits(sb.Spec.PodTemplate.Spec.Containers)
	names := podNames(sb)
	u.Pod = names[0]
	for _, name := range names {
		if u.MetricsErr = c.podMetrics(ctx, name, &u); u.MetricsErr == nil {
			u.Pod = name
		}
		if !errors.Is(u.MetricsErr, errPodNotMeasured) {
			break
		}
	}
	u.Measured = u.MetricsErr == nil
	return u, nil
}

// podNames are the names the Sandbox's pod may have, most likely first: its own name, then the
// legacy annotation's when that differs.
func podNames(sb *sandboxv1beta1.Sandbox) []string {
	names := []string{sb.Name}
	if n := sb.Annotations[podNameAnnotation]; n != "" && n != sb.Name {
		names = append(names, n)
	}
	return names
}

// limits sums the containers' limits; one container without a limit makes the pod unlimited.
func limits(cs []corev1.Container) (cpuMillis, memBytes int64) {
	cpuAll, memAll := true, true
	for _, ct := range cs {
		if q, ok := ct.Resources.Limits[corev1.ResourceCPU]; ok {
			cpuMillis += q.MilliValue()
		} else {
			cpuAll = false
		}
		if q, ok := ct.Resources.Limits[corev1.ResourceMemory]; ok {
			memBytes += q.Value()
		} else {
			memAll = false
		}
	}
	if !cpuAll {
		cpuMillis = 0
	}
	if !memAll {
		memBytes = 0
	}
	return cpuMillis, memBytes
}

func (c *Client) podMetrics(ctx context.Context, pod string, u *Usage) error {
	if c.metrics == nil {
		return fmt.Errorf("%w: no metrics client", ErrNoMetrics)
	}
	m, err := c.metrics.MetricsV1beta1().PodMetricses(u.Claim.Namespace).Get(ctx, pod, metav1.GetOptions{})
	switch {
	case isNoMetricsAPI(err):
		return fmt.Errorf("%w: metrics.k8s.io is not served by this cluster (no metrics-server)", ErrNoMetrics)
	case apierrors.IsNotFound(err):
		return errPodNotMeasured
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w: the server may not read pods.metrics.k8s.io (RBAC)", ErrNoMetrics)
	case err != nil:
		return fmt.Errorf("%w: %w", ErrNoMetrics, err)
	}
	for _, ct := range m.Containers {
		u.CPUMillis += ct.Usage.Cpu().MilliValue()
		u.MemoryBytes += ct.Usage.Memory().Value()
	}
	u.MeasuredAt, u.Window = m.Timestamp.Time, m.Window.Duration
	return nil
}

// isNoMetricsAPI tells "the group is not served" (a 404 or 503 on the whole API) from a pod
// that was not found: only the latter names the pod in its details.
func isNoMetricsAPI(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	s := st.Status()
	if apierrors.IsServiceUnavailable(err) {
		return true
	}
	return s.Code == 404 && (s.Details == nil || s.Details.Name == "")
}
