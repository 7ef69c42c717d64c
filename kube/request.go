package kube

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// Annotations of a claim created for a request id (CreateRequest.RequestID).
const (
	// RequestIDAnnotation holds the caller's request id as given.
	RequestIDAnnotation = ServerDomain + "/request-id"
	// createCallAnnotation names the one call that posted the claim, so that call's cleanup
	// after a cancelled POST deletes the claim only if it was its own, never a racer's.
	createCallAnnotation = ServerDomain + "/create-call"
)

// requestClaimPrefix sets request claims apart from random ones (claimNamePrefix + 8 hex).
const requestClaimPrefix = claimNamePrefix + "r"

// RequestClaimName is the claim name of owner's request id: the same for every call, process
// and replica, so the API server's uniqueness of names makes one claim of concurrent creates.
// Hashed, so any request id and owner make a valid name that tells neither.
func RequestClaimName(owner, requestID string) string {
	sum := sha256.Sum256([]byte(owner + "\x00" + requestID))
	return requestClaimPrefix + hex.EncodeToString(sum[:])[:20]
}

// requestClaim posts the claim of req.RequestID or, when it exists already, returns the live
// one of the same owner and pool. reused says the claim was not posted by this call, which
// must then never delete it. With req.Attach it never posts: no claim is ErrNotFound.
func (c *Client) requestClaim(ctx context.Context, req CreateRequest) (claim *extv1beta1.SandboxClaim, reused bool, err error) {
	claims := c.ext.ExtensionsV1beta1().SandboxClaims(req.Namespace)
	name := RequestClaimName(req.Owner, req.RequestID)
	call, err := callID()
	if err != nil {
		return nil, false, err
	}
	// A claim deleted between our POST's AlreadyExists and our GET frees the name: post again.
	for range nameAttempts {
		if !req.Attach {
			obj := c.buildClaim(req, name)
			obj.Annotations[RequestIDAnnotation] = req.RequestID
			obj.Annotations[createCallAnnotation] = call
			created, err := claims.Create(ctx, obj, metav1.CreateOptions{})
			switch {
			case err == nil:
				return created, false, nil
			case !apierrors.IsAlreadyExists(err) && ctx.Err() != nil:
				// The POST may have landed before the cancellation; delete it if it is ours.
				return nil, false, c.cleanupCall(ctx, req.Namespace, name, call, fmt.Errorf("creating sandbox claim: %w", err))
			case !apierrors.IsAlreadyExists(err):
				return nil, false, fmt.Errorf("creating sandbox claim in namespace %q: %w", req.Namespace, err)
			}
		}
		// The API itself, not the watch cache: a racer's claim may be a millisecond old.
		existing, err := claims.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && req.Attach:
			return nil, false, &notFoundError{namespace: req.Namespace, name: name}
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, false, fmt.Errorf("getting sandbox claim %q in namespace %q: %w", name, req.Namespace, err)
		}
		if err := c.sameRequest(req, existing); err != nil {
			return nil, false, err
		}
		return existing, true, nil
	}
	return nil, false, fmt.Errorf("creating sandbox claim %q in namespace %q: deleted and recreated %d times meanwhile; retry", name, req.Namespace, nameAttempts)
}

// sameRequest checks that an existing claim is the live answer to req.
func (c *Client) sameRequest(req CreateRequest, obj *extv1beta1.SandboxClaim) error {
	switch {
	case obj.Labels[c.ownerKey] != req.Owner || obj.Annotations[RequestIDAnnotation] != req.RequestID:
		// A hash collision or a hand-made claim: not this caller's to see or use.
		return fmt.Errorf("%w: request_id %q cannot be used here; choose another request_id", ErrInvalid, req.RequestID)
	case obj.DeletionTimestamp != nil:
		return fmt.Errorf("%w: the sandbox %q of request_id %q is being deleted; use a new request_id for a new sandbox",
			ErrInvalid, obj.Name, req.RequestID)
	case obj.Spec.WarmPoolRef.Name != req.WarmPool:
		return fmt.Errorf("%w: request_id %q already made sandbox %q from warm pool %q, not %q; use a new request_id for another sandbox",
			ErrInvalid, req.RequestID, obj.Name, obj.Spec.WarmPoolRef.Name, req.WarmPool)
	}
	return nil
}

// cleanupCall deletes the claim name if this call (call) posted it, exactly that one (by UID).
func (c *Client) cleanupCall(ctx context.Context, namespace, name, call string, cause error) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	obj, err := c.ext.ExtensionsV1beta1().SandboxClaims(namespace).Get(dctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return cause
	case err != nil:
		return fmt.Errorf("%w (checking for a claim left behind also failed: %v)", cause, err)
	case obj.Annotations[createCallAnnotation] != call:
		return cause // another call's claim: it answers for it
	}
	return c.cleanup(ctx, namespace, name, &metav1.Preconditions{UID: &obj.UID}, cause)
}

func callID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generating call id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
