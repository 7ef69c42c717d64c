package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// Suspension is the Sandbox's spec.operatingMode: a SandboxClaim has no field of its own for
// it (agent-sandbox v1.0.1), so Suspend and Resume patch the Sandbox the claim is bound to.
// The controller then deletes the pod and keeps the Sandbox and its PersistentVolumeClaims.

const (
	// StatusSuspended is get_sandbox_status' status of a Sandbox whose operatingMode is
	// Suspended: its Ready=False reason.
	StatusSuspended = sandboxv1beta1.SandboxReasonSuspended

	// DefaultSuspendWait bounds how long Suspend waits for the pod to be gone: the pod's
	// termination grace period (30 s by default) plus the controller's reconcile.
	DefaultSuspendWait = 60 * time.Second

	// LifetimeLeftAnnotation holds, on a claim suspended with WithSuspendPausesLifetime, the
	// seconds its lifecycle had left; Resume restores shutdownTime from it.
	LifetimeLeftAnnotation = "mcp.k8s-agent-sandbox/lifetime-left-seconds"

	conditionSuspended = string(sandboxv1beta1.SandboxConditionSuspended)
)

// WithSuspendPausesLifetime makes Suspend stop a claim's lifetime clock and Resume restart it
// with the time that was left. The hard cap (Lifetime.MaxLifetime) does not stop: a suspended
// claim's shutdownTime becomes its creation plus the cap (removed only without a cap), and a
// resumed one's is never later than that. Off by default: a suspended sandbox expires when it
// would have anyway.
func WithSuspendPausesLifetime(on bool) Option { return func(o *options) { o.pauseLifetime = on } }

// Suspend sets the owner's sandbox to operatingMode Suspended and waits (at most
// DefaultSuspendWait) for its pod to be gone. The Status says how far it got: a pod still
// terminating when the wait ends is gone soon after. Suspending a suspended sandbox is a no-op.
func (c *Client) Suspend(ctx context.Context, namespace, name, owner string) (Status, error) {
	obj, sb, err := c.boundSandbox(ctx, namespace, name, owner)
	if err != nil {
		return Status{}, err
	}
	if sb.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeSuspended {
		if sb, err = c.setOperatingMode(ctx, sb, sandboxv1beta1.SandboxOperatingModeSuspended); err != nil {
			return Status{}, err
		}
		// After the Sandbox: a failed suspension must not leave the claim without its lifetime.
		if c.pauseLifetime {
			if err := c.pauseClaimLifetime(ctx, obj); err != nil {
				return Status{}, err
			}
		}
	}
	gen := sb.Generation
	last, err := c.awaitSandbox(ctx, sb, c.suspendWait, func(s *sandboxv1beta1.Sandbox) bool {
		cond := meta.FindStatusCondition(s.Status.Conditions, conditionSuspended)
		// observedGeneration: a condition left from an earlier suspension does not count.
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration >= gen
	}, func(string) {})
	if err != nil && ctx.Err() != nil {
		return Status{}, err
	}
	// A timeout is no failure: the controller finishes the suspension on its own.
	return statusOf(last), nil
}

// Resume sets the owner's sandbox back to operatingMode Running, waits until it is Ready with
// a new pod (readyTimeout <= 0: DefaultReadyTimeout) and returns the claim with the new pod's
// address. Resuming a running sandbox just waits for it to be Ready.
func (c *Client) Resume(ctx context.Context, namespace, name, owner string, readyTimeout time.Duration, progress func(string)) (Claim, error) {
	if progress == nil {
		progress = func(string) {}
	}
	if readyTimeout <= 0 {
		readyTimeout = DefaultReadyTimeout
	}
	obj, sb, err := c.boundSandbox(ctx, namespace, name, owner)
	if err != nil {
		return Claim{}, err
	}
	if limit := c.lifetimeCap(obj); !limit.IsZero() && !c.now().Before(limit) {
		// Past its cap (its lifetime paused by a server without one, say): it ends, not resumes.
		if err := c.endAtCap(ctx, obj, limit); err != nil {
			return Claim{}, err
		}
		return Claim{}, c.pastCap(limit)
	}
	if sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended {
		if sb, err = c.setOperatingMode(ctx, sb, sandboxv1beta1.SandboxOperatingModeRunning); err != nil {
			return Claim{}, err
		}
		progress("resuming")
	}
	if _, ok := obj.Annotations[LifetimeLeftAnnotation]; ok {
		// Whatever the setting says now: a lifetime paused once is restarted.
		if obj, err = c.restartClaimLifetime(ctx, obj); err != nil {
			return Claim{}, err
		}
	}
	gen := sb.Generation
	ready, err := c.awaitSandbox(ctx, sb, readyTimeout, func(s *sandboxv1beta1.Sandbox) bool {
		cond := meta.FindStatusCondition(s.Status.Conditions, conditionReady)
		// observedGeneration: a Ready condition from before the suspension does not count.
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration >= gen && len(s.Status.PodIPs) > 0
	}, progress)
	if err != nil {
		return Claim{}, err
	}
	claim := claimFromObject(obj)
	claim.PodIPs, claim.ServiceFQDN = nil, "" // the claim's mirrors may still hold the old pod's
	fillFromSandbox(&claim, ready)
	progress("ready")
	return claim, nil
}

// boundSandbox reads the owner's claim and its Sandbox from the API (not the cache: a
// suspension acts on the current state). A claim without a Sandbox is not ready.
func (c *Client) boundSandbox(ctx context.Context, namespace, name, owner string) (*extv1beta1.SandboxClaim, *sandboxv1beta1.Sandbox, error) {
	obj, err := c.ownedClaim(ctx, namespace, name, owner)
	if err != nil {
		return nil, nil, err
	}
	sbName := obj.Status.SandboxStatus.Name
	var sb *sandboxv1beta1.Sandbox
	if sbName != "" {
		if sb, err = c.getSandbox(ctx, namespace, sbName); err != nil {
			return nil, nil, err
		}
	}
	if sb == nil {
		return nil, nil, fmt.Errorf("%w: sandbox claim %q in namespace %q has no sandbox", ErrNotReady, name, namespace)
	}
	return obj, sb, nil
}

func (c *Client) setOperatingMode(ctx context.Context, sb *sandboxv1beta1.Sandbox, mode sandboxv1beta1.SandboxOperatingMode) (*sandboxv1beta1.Sandbox, error) {
	// The UID precondition keeps a same-named Sandbox created since the read untouched.
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": sb.UID},
		"spec":     map[string]any{"operatingMode": mode},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding the operating mode patch: %w", err)
	}
	out, err := c.core.AgentsV1beta1().Sandboxes(sb.Namespace).Patch(ctx, sb.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("setting sandbox %q in namespace %q to %s: %w", sb.Name, sb.Namespace, mode, err)
	}
	return out, nil
}

// pauseClaimLifetime records the lifetime left and moves shutdownTime to the hard cap (removes
// it without a cap), so that the claim controller does not expire the claim while it is
// suspended, except at the cap, which a suspension never stops.
func (c *Client) pauseClaimLifetime(ctx context.Context, obj *extv1beta1.SandboxClaim) error {
	at := shutdownTime(obj)
	if at.IsZero() {
		return nil // no lifetime to pause
	}
	left := max(int64(at.Sub(c.now()).Seconds()), 1)
	var lifecycle any // none: the claim controller never expires it
	if limit := c.lifetimeCap(obj); !limit.IsZero() {
		lifecycle = map[string]any{"shutdownTime": metav1.NewTime(limit), "shutdownPolicy": extv1beta1.ShutdownPolicyDelete}
	}
	return c.patchClaim(ctx, obj, map[string]any{
		"metadata": map[string]any{"uid": obj.UID, "annotations": map[string]any{LifetimeLeftAnnotation: strconv.FormatInt(left, 10)}},
		"spec":     map[string]any{"lifecycle": lifecycle},
	}, nil)
}

// restartClaimLifetime sets shutdownTime to now plus the lifetime that was left, at most the
// hard cap.
func (c *Client) restartClaimLifetime(ctx context.Context, obj *extv1beta1.SandboxClaim) (*extv1beta1.SandboxClaim, error) {
	left, err := strconv.ParseInt(obj.Annotations[LifetimeLeftAnnotation], 10, 64)
	if err != nil || left < 1 {
		left = 1 // a mangled annotation must not make the claim immortal
	}
	next := c.now().Add(time.Duration(left) * time.Second).UTC().Truncate(time.Second)
	if limit := c.lifetimeCap(obj); !limit.IsZero() && next.After(limit) {
		next = limit
	}
	at := metav1.NewTime(next)
	var out *extv1beta1.SandboxClaim
	err = c.patchClaim(ctx, obj, map[string]any{
		"metadata": map[string]any{"uid": obj.UID, "annotations": map[string]any{LifetimeLeftAnnotation: nil}},
		"spec":     map[string]any{"lifecycle": map[string]any{"shutdownTime": at, "shutdownPolicy": extv1beta1.ShutdownPolicyDelete}},
	}, &out)
	return out, err
}

// endAtCap sets the shutdownTime of a claim past its hard cap to the cap, so that the claim
// controller deletes it now, unless it already will.
func (c *Client) endAtCap(ctx context.Context, obj *extv1beta1.SandboxClaim, limit time.Time) error {
	if at := shutdownTime(obj); !at.IsZero() && !at.After(limit) {
		return nil
	}
	return c.patchClaim(ctx, obj, map[string]any{
		"metadata": map[string]any{"uid": obj.UID, "annotations": map[string]any{LifetimeLeftAnnotation: nil}},
		"spec":     map[string]any{"lifecycle": map[string]any{"shutdownTime": metav1.NewTime(limit), "shutdownPolicy": extv1beta1.ShutdownPolicyDelete}},
	}, nil)
}

func (c *Client) patchClaim(ctx context.Context, obj *extv1beta1.SandboxClaim, patch map[string]any, out **extv1beta1.SandboxClaim) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encoding the claim lifecycle patch: %w", err)
	}
	got, err := c.ext.ExtensionsV1beta1().SandboxClaims(obj.Namespace).Patch(ctx, obj.Name, types.MergePatchType, b, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("updating the lifecycle of sandbox claim %q in namespace %q: %w", obj.Name, obj.Namespace, err)
	}
	if out != nil {
		*out = got
	}
	return nil
}
