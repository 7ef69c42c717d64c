package localstack

import (
	"context"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// Claimed is a Ready claim with the Sandbox and Pod it got.
type Claimed struct {
	Claim   *extv1beta1.SandboxClaim
	Sandbox *sandboxv1beta1.Sandbox
	Pod     *corev1.Pod
}

// PodIP is the sandbox pod's address.
func (c *Claimed) PodIP() string { return c.Pod.Status.PodIP }

// Claim creates a SandboxClaim on pool in ns and waits until it is Ready.
func (s *Stack) Claim(ctx context.Context, ns, pool string) (*Claimed, error) {
	c, err := s.Extensions.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, &extv1beta1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "ls-claim-"},
		Spec:       extv1beta1.SandboxClaimSpec{WarmPoolRef: extv1beta1.SandboxWarmPoolRef{Name: pool}},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create claim: %w", err)
	}
	return s.WaitClaimReady(ctx, ns, c.Name)
}

// WaitClaimReady waits until the claim is Ready with status.sandbox.name set, then fetches
// its Sandbox and Pod.
func (s *Stack) WaitClaimReady(ctx context.Context, ns, name string) (*Claimed, error) {
	var out Claimed
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		c, err := s.Extensions.ExtensionsV1beta1().SandboxClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		out.Claim = c
		return c.Status.SandboxStatus.Name != "" && meta.IsStatusConditionTrue(c.Status.Conditions, "Ready"), nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim %s/%s not ready: %w (last status %+v)", ns, name, err, claimStatus(out.Claim))
	}
	sbx := out.Claim.Status.SandboxStatus.Name
	if out.Sandbox, err = s.Sandboxes.AgentsV1beta1().Sandboxes(ns).Get(ctx, sbx, metav1.GetOptions{}); err != nil {
		return nil, fmt.Errorf("get sandbox: %w", err)
	}
	pod := sbx
	if a := out.Sandbox.Annotations[sandboxv1beta1.SandboxPodNameAnnotation]; a != "" {
		pod = a
	}
	if out.Pod, err = s.Kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{}); err != nil {
		return nil, fmt.Errorf("get pod: %w", err)
	}
	return &out, nil
}

func claimStatus(c *extv1beta1.SandboxClaim) any {
	if c == nil {
		return nil
	}
	return c.Status
}

// WaitGone waits until get reports NotFound.
func WaitGone(ctx context.Context, get func(ctx context.Context) error) error {
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		err := get(ctx)
		return apierrors.IsNotFound(err), nil
	})
}

// Resolver resolves cluster DNS names (<svc>.<ns>.svc.cluster.local) with the stack's
// CoreDNS, at its Service address.
func (s *Stack) Resolver() *net.Resolver {
	addr := s.Env["K8S_SANDBOX_DNS_SERVER"]
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}
