package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// Status values reported by get_sandbox_status.
const (
	StatusReady    = "SandboxReady"
	StatusNotReady = "SandboxNotReady"
	StatusNotFound = "SandboxNotFound"

	sandboxMissingMessage = "Sandbox object not found in Kubernetes."
	conditionReady        = "Ready"
)

// Get returns the owner's claim, with Sandbox details when the Sandbox exists. It answers from
// the watch cache when it can (every exec and file call comes here first).
func (c *Client) Get(ctx context.Context, namespace, name, owner string) (Claim, error) {
	obj, sb, err := c.claimAndSandbox(ctx, namespace, name, owner)
	if err != nil {
		return Claim{}, err
	}
	c.renewOnUse(obj)
	claim := claimFromObject(obj)
	claim.Ready = false // only the Sandbox's own condition counts here
	if sb == nil && claim.SandboxName != "" {
		// The claim's mirrors may be stale once the Sandbox is gone.
		claim.PodIPs, claim.ServiceFQDN = nil, ""
	}
	fillFromSandbox(&claim, sb)
	claim.Deadline = c.deadlineAfterUse(claim)
	return claim, nil
}

// claimAndSandbox returns the owner's claim and its Sandbox (nil when it has none or it is
// gone), from the watch cache when it can.
func (c *Client) claimAndSandbox(ctx context.Context, namespace, name, owner string) (*extv1beta1.SandboxClaim, *sandboxv1beta1.Sandbox, error) {
	obj, sb, miss := c.fromCache(namespace, name, owner)
	if obj != nil {
		return obj, sb, nil
	}
	obj, err := c.ownedClaimAfter(ctx, miss, namespace, name, owner)
	if err != nil {
		return nil, nil, err
	}
	c.watchNamespace(namespace) // a claim of ours is here: the next calls can read the cache
	if obj.Status.SandboxStatus.Name == "" {
		return obj, nil, nil
	}
	sb, err = c.getSandbox(ctx, namespace, obj.Status.SandboxStatus.Name)
	if err != nil {
		return nil, nil, err
	}
	return obj, sb, nil
}

// List returns the owner's claims in namespace, sorted by name. Sandbox details come from the
// claim status only, to keep this one API call.
func (c *Client) List(ctx context.Context, namespace, owner string) ([]Claim, error) {
	return c.list(ctx, namespace, owner)
}

// ListAllNamespaces returns the owner's claims cluster-wide, sorted by namespace and name.
// It needs cluster-scoped list RBAC; the API error is returned as is (wrapped) otherwise.
func (c *Client) ListAllNamespaces(ctx context.Context, owner string) ([]Claim, error) {
	return c.list(ctx, metav1.NamespaceAll, owner)
}

func (c *Client) list(ctx context.Context, namespace, owner string) ([]Claim, error) {
	if owner == "" {
		return nil, fmt.Errorf("%w: empty owner", ErrInvalid)
	}
	sel, err := labels.ValidatedSelectorFromSet(labels.Set{c.ownerKey: owner})
	if err != nil {
		return nil, fmt.Errorf("%w: owner selector: %w", ErrInvalid, err)
	}
	list, err := c.ext.ExtensionsV1beta1().SandboxClaims(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		if namespace == metav1.NamespaceAll {
			return nil, fmt.Errorf("listing sandbox claims in all namespaces: %w", err)
		}
		return nil, fmt.Errorf("listing sandbox claims in namespace %q: %w", namespace, err)
	}
	out := make([]Claim, 0, len(list.Items))
	for i := range list.Items {
		// The selector already filters; checking again guards against clients that ignore it.
		if v, ok := list.Items[i].Labels[c.ownerKey]; ok && v == owner {
			claim := claimFromObject(&list.Items[i])
			claim.Labels = c.userLabels(&list.Items[i])
			out = append(out, claim)
		}
	}
	if len(out) > 0 && namespace != metav1.NamespaceAll {
		c.watchNamespace(namespace)
	}
	slices.SortFunc(out, func(a, b Claim) int {
		if n := strings.Compare(a.Namespace, b.Namespace); n != 0 {
			return n
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// CountPrincipal counts the live claims labelled with principal in namespace, reading the API
// itself rather than the watch cache: a cap must see a claim the moment it was created.
func (c *Client) CountPrincipal(ctx context.Context, namespace, principal string) (int, error) {
	sel, err := labels.ValidatedSelectorFromSet(labels.Set{PrincipalLabel: principal})
	if err != nil {
		return 0, fmt.Errorf("%w: principal selector: %w", ErrInvalid, err)
	}
	list, err := c.ext.ExtensionsV1beta1().SandboxClaims(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return 0, fmt.Errorf("counting sandbox claims in namespace %q: %w", namespace, err)
	}
	n := 0
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil { // the selector matched the label
			n++
		}
	}
	return n, nil
}

// Delete removes the owner's claim; the controller's owner references cascade to the Sandbox.
func (c *Client) Delete(ctx context.Context, namespace, name, owner string) error {
	obj, _, miss := c.fromCache(namespace, name, owner)
	if obj == nil {
		var err error
		if obj, err = c.ownedClaimAfter(ctx, miss, namespace, name, owner); err != nil {
			return err
		}
	}
	// The UID precondition keeps a same-named claim created since the read (the cache's or
	// the API's) from being deleted.
	err := c.deleteClaim(ctx, namespace, name, &metav1.Preconditions{UID: &obj.UID})
	if apierrors.IsConflict(err) {
		return nil // ours is gone; a different claim now has the name
	}
	if err == nil && c.cache != nil {
		c.cache.markDeleted(namespace, obj.UID)
	}
	return err
}

// deleteClaim deletes in the background; a claim that is already gone counts as deleted.
func (c *Client) deleteClaim(ctx context.Context, namespace, name string, pre *metav1.Preconditions) error {
	policy := metav1.DeletePropagationBackground
	err := c.ext.ExtensionsV1beta1().SandboxClaims(namespace).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     pre,
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting sandbox claim %q in namespace %q: %w", name, namespace, err)
	}
	return nil
}

// Status maps the Sandbox's Ready condition for get_sandbox_status.
func (c *Client) Status(ctx context.Context, namespace, name, owner string) (Status, error) {
	obj, sb, miss := c.fromCache(namespace, name, owner)
	if obj != nil {
		return withShutdown(statusOf(sb), obj), nil
	}
	obj, err := c.ownedClaimAfter(ctx, miss, namespace, name, owner)
	if err != nil {
		return Status{}, err
	}
	c.watchNamespace(namespace)
	sbName := obj.Status.SandboxStatus.Name
	if sbName == "" {
		return withShutdown(Status{Status: StatusNotFound, Message: sandboxMissingMessage}, obj), nil
	}
	sb, err = c.getSandbox(ctx, namespace, sbName)
	if err != nil {
		return Status{}, err
	}
	return withShutdown(statusOf(sb), obj), nil
}

func withShutdown(st Status, obj *extv1beta1.SandboxClaim) Status {
	st.ShutdownAt = shutdownTime(obj)
	return st
}

// statusOf maps a Sandbox (nil: missing) to a Status.
func statusOf(sb *sandboxv1beta1.Sandbox) Status {
	if sb == nil {
		return Status{Status: StatusNotFound, Message: sandboxMissingMessage}
	}
	if sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended {
		return suspendedStatus(sb)
	}
	cond := meta.FindStatusCondition(sb.Status.Conditions, conditionReady)
	if cond == nil {
		return Status{Status: StatusNotReady}
	}
	if cond.Status == metav1.ConditionTrue {
		return Status{Status: StatusReady, Ready: true, Message: cond.Message}
	}
	return Status{Status: StatusNotReady, Message: cond.Message}
}

func claimFromObject(obj *extv1beta1.SandboxClaim) Claim {
	return Claim{
		Namespace:   obj.Namespace,
		Name:        obj.Name,
		WarmPool:    obj.Spec.WarmPoolRef.Name,
		SandboxName: obj.Status.SandboxStatus.Name,
		PodIPs:      slices.Clone(obj.Status.SandboxStatus.PodIPs),
		ServiceFQDN: obj.Status.SandboxStatus.ServiceFQDN, // agent-sandbox v1.0 and later mirror it
		Ready:       meta.IsStatusConditionTrue(obj.Status.Conditions, conditionReady),
		Created:     obj.CreationTimestamp.Time,
		ShutdownAt:  shutdownTime(obj),

		ShutdownAfter: window(obj),
		RequestID:     obj.Annotations[RequestIDAnnotation],
		Suspended:     readyReason(obj) == sandboxv1beta1.SandboxReasonSuspended,
	}
}

// readyReason is the claim's Ready reason, which the controller forwards from the Sandbox.
func readyReason(obj *extv1beta1.SandboxClaim) string {
	if cond := meta.FindStatusCondition(obj.Status.Conditions, conditionReady); cond != nil {
		return cond.Reason
	}
	return ""
}

// userLabels are the claim's labels without the server's own (owner, principal, created-by):
// what the caller set with create_sandbox's labels.
func (c *Client) userLabels(obj *extv1beta1.SandboxClaim) map[string]string {
	out := map[string]string{}
	for k, v := range obj.Labels {
		if k == c.ownerKey || k == createdByLabel || strings.HasPrefix(k, ServerDomain+"/") {
			continue
		}
		out[k] = v
	}
	return out
}

func shutdownTime(obj *extv1beta1.SandboxClaim) time.Time {
	if obj.Spec.Lifecycle == nil || obj.Spec.Lifecycle.ShutdownTime == nil {
		return time.Time{}
	}
	return obj.Spec.Lifecycle.ShutdownTime.Time
}

// fillFromSandbox prefers the Sandbox's own view; the claim's podIPs and serviceFQDN mirrors
// stay as fallback (the claim's lag the Sandbox's by a reconcile).
func fillFromSandbox(claim *Claim, sb *sandboxv1beta1.Sandbox) {
	if sb == nil {
		return
	}
	if len(sb.Status.PodIPs) > 0 {
		claim.PodIPs = slices.Clone(sb.Status.PodIPs)
	}
	if sb.Status.ServiceFQDN != "" {
		claim.ServiceFQDN = sb.Status.ServiceFQDN
	}
	claim.Ready = meta.IsStatusConditionTrue(sb.Status.Conditions, conditionReady)
	claim.Suspended = claim.Suspended || sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended
	claim.VolumePath = volumePath(sb)
}

// suspendedStatus reports the controller's progress of a suspension: the Suspended
// condition's reason and message (PodTerminated once the pod is gone), else Ready's.
func suspendedStatus(sb *sandboxv1beta1.Sandbox) Status {
	cond := meta.FindStatusCondition(sb.Status.Conditions, conditionSuspended)
	if cond == nil || cond.Reason == sandboxv1beta1.SandboxReasonNotSuspended {
		// Not reconciled since the suspension yet (or a controller without the condition).
		cond = meta.FindStatusCondition(sb.Status.Conditions, conditionReady)
	}
	if cond == nil {
		return Status{Status: StatusSuspended, Message: "suspension requested"}
	}
	msg := cond.Message
	if cond.Reason != "" {
		msg = cond.Reason + ": " + cond.Message
	}
	return Status{Status: StatusSuspended, Message: msg}
}
