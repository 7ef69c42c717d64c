package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// nameAttempts bounds retries on a (very unlikely) random-name collision.
const nameAttempts = 5

// Create posts a claim for req.WarmPool, waits by watch until it is Ready and bound to a Sandbox,
// and returns it. On any failure, timeout or cancellation the claim is deleted before returning,
// unless it was an existing claim of req.RequestID: that one belongs to the call that posted it.
func (c *Client) Create(ctx context.Context, req CreateRequest) (Claim, error) {
	if err := c.validate(req); err != nil {
		return Claim{}, err
	}
	if err := c.checkCreateLifetime(req.ShutdownAfter); err != nil {
		return Claim{}, err
	}
	progress := req.Progress
	if progress == nil {
		progress = func(string) {}
	}
	var (
		created *extv1beta1.SandboxClaim
		reused  bool
		err     error
	)
	if req.RequestID != "" {
		created, reused, err = c.requestClaim(ctx, req)
	} else {
		created, err = c.createClaim(ctx, req)
	}
	if err != nil {
		return Claim{}, err
	}
	if req.Posted != nil {
		req.Posted()
	}
	if reused {
		progress("claim of this request_id found")
	} else {
		progress("claim created")
	}
	c.watchNamespace(req.Namespace) // syncs while the claim gets ready

	claim, err := c.awaitReady(ctx, req, created, progress)
	if err != nil {
		if reused {
			return Claim{}, err
		}
		return Claim{}, c.cleanup(ctx, req.Namespace, created.Name, &metav1.Preconditions{UID: &created.UID}, err)
	}
	claim.Reused = reused
	progress("ready")
	return claim, nil
}

func (c *Client) awaitReady(ctx context.Context, req CreateRequest, created *extv1beta1.SandboxClaim, progress func(string)) (Claim, error) {
	timeout := req.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	w := &claimWaiter{
		claims:   c.ext.ExtensionsV1beta1().SandboxClaims(req.Namespace),
		name:     created.Name,
		rv:       created.ResourceVersion,
		progress: progress,
	}
	// A claim of an earlier create of the same request may be ready already: no event to wait for.
	done, err := w.observe(created)
	if err != nil {
		return Claim{}, err
	}
	ready := created
	if !done {
		if ready, err = w.wait(ctx, timeout); err != nil {
			return Claim{}, err
		}
	}
	claim := claimFromObject(ready)
	sb, err := c.getSandbox(ctx, req.Namespace, claim.SandboxName)
	if err != nil {
		return Claim{}, err
	}
	if sb == nil {
		return Claim{}, &ClaimFailure{Claim: created.Name, Reason: "SandboxMissing",
			Message: fmt.Sprintf("sandbox %q vanished right after the claim became ready", claim.SandboxName)}
	}
	fillFromSandbox(&claim, sb)
	claim.Ready = true // the claim's Ready mirrors the Sandbox's at the time of the event
	return claim, nil
}

// volumePath is where the first container mounts a persistent WorkspaceVolume, if any.
func volumePath(sb *sandboxv1beta1.Sandbox) string {
	if !slices.ContainsFunc(sb.Spec.VolumeClaimTemplates, func(v sandboxv1beta1.PersistentVolumeClaimTemplate) bool { return v.Name == WorkspaceVolume }) {
		return ""
	}
	if cs := sb.Spec.PodTemplate.Spec.Containers; len(cs) > 0 {
		for _, m := range cs[0].VolumeMounts {
			if m.Name == WorkspaceVolume {
				return m.MountPath
			}
		}
	}
	return ""
}

// cleanup deletes a claim whose creation failed, on a context that outlives ctx's cancellation;
// pre (when known) keeps it to the very claim this call made.
func (c *Client) cleanup(ctx context.Context, namespace, name string, pre *metav1.Preconditions, cause error) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := c.deleteClaim(dctx, namespace, name, pre); err != nil {
		return fmt.Errorf("%w (cleanup also failed: %v)", cause, err)
	}
	return cause
}

// createClaim posts the claim, retrying with a fresh name on AlreadyExists.
func (c *Client) createClaim(ctx context.Context, req CreateRequest) (*extv1beta1.SandboxClaim, error) {
	claims := c.ext.ExtensionsV1beta1().SandboxClaims(req.Namespace)
	for range nameAttempts {
		name, err := c.newName()
		if err != nil {
			return nil, err
		}
		created, err := claims.Create(ctx, c.buildClaim(req, name), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				// The POST may have landed before the cancellation; don't leave it behind.
				return nil, c.cleanup(ctx, req.Namespace, name, nil, fmt.Errorf("creating sandbox claim: %w", err))
			}
			return nil, fmt.Errorf("creating sandbox claim in namespace %q: %w", req.Namespace, err)
		}
		return created, nil
	}
	return nil, fmt.Errorf("creating sandbox claim in namespace %q: %d generated names already taken", req.Namespace, nameAttempts)
}

func (c *Client) buildClaim(req CreateRequest, name string) *extv1beta1.SandboxClaim {
	now := c.now()
	lbls := make(map[string]string, len(req.Labels)+2)
	maps.Copy(lbls, req.Labels)
	lbls[c.ownerKey] = req.Owner
	if req.Principal != "" {
		lbls[PrincipalLabel] = req.Principal
	}
	lbls[createdByLabel] = createdByValue

	claim := &extv1beta1.SandboxClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   req.Namespace,
			Labels:      lbls,
			Annotations: map[string]string{firstRequestedAtAnno: now.UTC().Format(time.RFC3339Nano)},
		},
		Spec: extv1beta1.SandboxClaimSpec{
			WarmPoolRef: extv1beta1.SandboxWarmPoolRef{Name: req.WarmPool},
		},
	}
	if at, window := c.createLifetime(now, req.ShutdownAfter); !at.IsZero() {
		t := metav1.NewTime(at)
		claim.Spec.Lifecycle = &extv1beta1.Lifecycle{ShutdownTime: &t, ShutdownPolicy: extv1beta1.ShutdownPolicyDelete}
		if window > 0 {
			claim.Annotations[shutdownAfterAnno] = strconv.Itoa(int(window / time.Second))
		}
	}
	if len(req.PodLabels) > 0 || len(req.PodAnnotations) > 0 {
		claim.Spec.AdditionalPodMetadata = sandboxv1beta1.PodMetadata{
			Labels:      maps.Clone(req.PodLabels),
			Annotations: maps.Clone(req.PodAnnotations),
		}
	}
	for _, k := range slices.Sorted(maps.Keys(req.Env)) {
		claim.Spec.Env = append(claim.Spec.Env, extv1beta1.EnvVar{Name: k, Value: req.Env[k]})
	}
	if !req.VolumeSize.IsZero() {
		claim.Spec.VolumeClaimTemplates = []sandboxv1beta1.PersistentVolumeClaimTemplate{{
			EmbeddedObjectMetadata: sandboxv1beta1.EmbeddedObjectMetadata{Name: WorkspaceVolume},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: req.VolumeSize}},
			},
		}}
	}
	return claim
}

// validate rejects what the API server or the controller would reject anyway, with clearer errors.
// Pod label domain allow-lists are the controller's business and surface as InvalidMetadata.
func (c *Client) validate(req CreateRequest) error {
	var errs []error
	if msgs := validation.IsDNS1123Label(req.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("namespace %q: %s", req.Namespace, msgs[0]))
	}
	if req.WarmPool == "" {
		errs = append(errs, errors.New("warm pool name is required"))
	}
	if req.Owner == "" || !ValidLabelValue(req.Owner) {
		errs = append(errs, fmt.Errorf("owner %q is not a valid non-empty label value", req.Owner))
	}
	for _, k := range []string{c.ownerKey, PrincipalLabel} {
		if _, ok := req.Labels[k]; ok {
			errs = append(errs, fmt.Errorf("label %q is reserved for ownership", k))
		}
	}
	errs = append(errs, c.checkMetadata(req)...)
	if req.Principal != "" && !ValidLabelValue(req.Principal) {
		errs = append(errs, fmt.Errorf("principal %q is not a valid label value", req.Principal))
	}
	errs = append(errs, checkLabels("label", req.Labels)...)
	errs = append(errs, checkLabels("pod label", req.PodLabels)...)
	for _, k := range slices.Sorted(maps.Keys(req.PodAnnotations)) {
		if !ValidLabelKey(k) {
			errs = append(errs, fmt.Errorf("pod annotation key %q is not a valid qualified name", k))
		}
	}
	if req.Attach && req.RequestID == "" {
		errs = append(errs, errors.New("attach needs a request id"))
	}
	if req.ShutdownAfter != nil && *req.ShutdownAfter < time.Second {
		errs = append(errs, fmt.Errorf("shutdown after %s: must be a positive number of seconds", *req.ShutdownAfter))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
}

func checkLabels(what string, m map[string]string) []error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if !ValidLabelKey(k) {
			errs = append(errs, fmt.Errorf("%s key %q is not a valid label key", what, k))
		}
		if !ValidLabelValue(v) {
			errs = append(errs, fmt.Errorf("%s %q value %q is not a valid label value", what, k, v))
		}
	}
	return errs
}
