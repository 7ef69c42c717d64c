package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// A transfer URL (create_transfer_url) is recorded on its claim, as exposed ports are, so any
// replica serves it and it ends with the claim: the annotation holds the claim's unused,
// unexpired grants as a JSON list, each with the SHA-256 of its URL token (never the token).
// A grant is removed by the write that uses it, made with the resourceVersion it was read at:
// of two replicas using one URL at once, the API server lets exactly one write land, so a URL
// works once across replicas.
const transferAnnotation = ServerDomain + "/transfers"

const (
	// MaxTransferGrants bounds the live transfer URLs of one sandbox (and the annotation's
	// size): each ends when used or expired.
	MaxTransferGrants = 16
)

var (
	// ErrTooManyTransfers is a sandbox with MaxTransferGrants live transfer URLs already.
	ErrTooManyTransfers = errors.New("too many transfer URLs")
	// ErrNoTransfer is a token with no live grant: used, expired, or never handed out.
	ErrNoTransfer = errors.New("no such transfer URL")
)

// TransferGrant is one transfer URL of a claim.
type TransferGrant struct {
	TokenHash string    `json:"tokenHash"` // token.Hash of the URL's token
	Principal string    `json:"principal"` // who asked for it; only they may use it ("" without authentication)
	Path      string    `json:"path"`      // the file in the sandbox
	Direction string    `json:"direction"` // the transfer package's names (upload, download)
	ExpiresAt time.Time `json:"expiresAt"`
}

// liveTransfers are obj's grants that have not expired at now. An annotation this server
// cannot read holds none: nothing in it is usable.
func liveTransfers(obj *extv1beta1.SandboxClaim, now time.Time) []TransferGrant {
	var all []TransferGrant
	if v, ok := obj.Annotations[transferAnnotation]; !ok || json.Unmarshal([]byte(v), &all) != nil {
		return nil
	}
	return slices.DeleteFunc(all, func(g TransferGrant) bool { return !now.Before(g.ExpiresAt) })
}

// GrantTransfer records g on the owner's claim. The grants that expired meanwhile are
// dropped by the same write.
func (c *Client) GrantTransfer(ctx context.Context, namespace, name, owner string, g TransferGrant) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := c.ownedClaim(ctx, namespace, name, owner)
		if err != nil {
			return err
		}
		live := liveTransfers(obj, c.now())
		if len(live) >= MaxTransferGrants {
			return fmt.Errorf("%w: sandbox claim %q has %d unused transfer URLs that have not expired; use one or wait for one to expire",
				ErrTooManyTransfers, name, len(live))
		}
		return c.writeTransfers(ctx, obj, append(live, g))
	})
}

// ConsumeTransfer removes the live grant of tokenHash from a claim of this server (whoever
// owns it: the URL's token decides) and returns it with the claim's addresses. accept sees
// the grant first; when it refuses (another principal, another method), its error is
// returned and the grant stays usable. A grant another replica consumed first is
// ErrNoTransfer, as is one that expired or never was.
//
// It reads the claim from the API, never the watch cache: the write that removes the grant
// must carry the resourceVersion the grant was seen at. So each use costs a GET of the claim
// and of its Sandbox plus a PATCH, and a refused token a GET.
func (c *Client) ConsumeTransfer(ctx context.Context, namespace, name, tokenHash string, accept func(TransferGrant) error) (Claim, TransferGrant, error) {
	var claim Claim
	var grant TransferGrant
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := c.serverClaim(ctx, namespace, name)
		if err != nil {
			return err
		}
		live := liveTransfers(obj, c.now())
		i := slices.IndexFunc(live, func(g TransferGrant) bool { return g.TokenHash == tokenHash })
		if i < 0 {
			return fmt.Errorf("sandbox claim %q in namespace %q: %w", name, namespace, ErrNoTransfer)
		}
		if err := accept(live[i]); err != nil {
			return err
		}
		// Before the write: a grant is not spent on a Sandbox that cannot be read.
		sb, err := c.claimSandbox(ctx, obj)
		if err != nil {
			return err
		}
		grant, claim = live[i], claimWithSandbox(obj, sb)
		return c.writeTransfers(ctx, obj, slices.Delete(live, i, i+1))
	})
	if err != nil {
		return Claim{}, TransferGrant{}, err
	}
	return claim, grant, nil
}

// Transfers returns the live grants of a claim of this server, whoever owns it (a request
// through a transfer URL carries no MCP owner; its token decides), from the watch cache when it
// holds the claim, unless fresh. It answers whether a token may be valid before
// ConsumeTransfer spends an API read on it: the transfer package's gate reads the API only for
// a token the cache lacks.
func (c *Client) Transfers(ctx context.Context, namespace, name string, fresh bool) ([]TransferGrant, error) {
	if c.cache != nil && !fresh {
		if obj, _, ok := c.cache.lookup(namespace, name); ok && obj.Labels[c.ownerKey] != "" && !c.cache.deletedHere(namespace, obj.UID) {
			return liveTransfers(obj, c.now()), nil
		}
	}
	obj, err := c.serverClaim(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	c.watchNamespace(namespace) // later requests read the cache
	return liveTransfers(obj, c.now()), nil
}

// TransferGrants returns the live grants of the owner's claim, oldest first.
func (c *Client) TransferGrants(ctx context.Context, namespace, name, owner string) ([]TransferGrant, error) {
	obj, err := c.ownedClaim(ctx, namespace, name, owner)
	if err != nil {
		return nil, err
	}
	return liveTransfers(obj, c.now()), nil
}

// writeTransfers replaces obj's grants with grants, on the condition that obj is still at
// the resourceVersion it was read at (a conflict otherwise, which the callers retry from a
// new read).
func (c *Client) writeTransfers(ctx context.Context, obj *extv1beta1.SandboxClaim, grants []TransferGrant) error {
	var value any // a merge patch's null removes the annotation
	if len(grants) > 0 {
		b, err := json.Marshal(grants)
		if err != nil {
			return fmt.Errorf("encoding transfer grants: %w", err)
		}
		value = string(b)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": obj.ResourceVersion, "annotations": map[string]any{transferAnnotation: value}}})
	if err != nil {
		return fmt.Errorf("encoding transfer patch: %w", err)
	}
	_, err = c.ext.ExtensionsV1beta1().SandboxClaims(obj.Namespace).Patch(ctx, obj.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("recording transfer URLs on sandbox claim %q: %w", obj.Name, err)
	}
	return nil
}
