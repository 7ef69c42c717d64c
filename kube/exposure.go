package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// An exposed port (expose_port) is recorded on its claim, not in a server's memory, so every
// replica can serve its URL and it ends with the claim: the annotation
// port.mcp.k8s-agent-sandbox/<port> names who exposed it and holds the SHA-256 of each URL token
// handed out for it. Only hashes are stored: whoever can read the claim learns no usable URL.
const exposurePrefix = "port.mcp.k8s-agent-sandbox/"

const (
	// MaxExposedPorts bounds the ports exposed on one sandbox (and the annotations they take).
	MaxExposedPorts = 16
	// maxTokensPerPort keeps the newest URLs of a port working when expose_port is called again;
	// older ones end.
	maxTokensPerPort = 4
)

// ErrTooManyPorts is a sandbox with MaxExposedPorts exposed already.
var ErrTooManyPorts = errors.New("too many exposed ports")

// Exposure is one exposed port of a claim.
type Exposure struct {
	Principal string   `json:"principal"` // who exposed it; only they may use it ("" without authentication)
	Tokens    []string `json:"tokens"`    // hex SHA-256 of each live URL token, newest last
}

func exposures(obj *extv1beta1.SandboxClaim) map[int]Exposure {
	out := map[int]Exposure{}
	for k, v := range obj.Annotations {
		p, ok := strings.CutPrefix(k, exposurePrefix)
		if !ok {
			continue
		}
		port, err := strconv.Atoi(p)
		var e Exposure
		if err != nil || json.Unmarshal([]byte(v), &e) != nil {
			continue // not ours to interpret; never usable
		}
		out[port] = e
	}
	return out
}

// Expose records tokenHash as a URL of port on the owner's claim, for principal.
func (c *Client) Expose(ctx context.Context, namespace, name, owner string, port int, principal, tokenHash string) error {
	return c.patchExposures(ctx, namespace, name, owner, func(have map[int]Exposure) (map[string]any, error) {
		e, ok := have[port]
		if !ok && len(have) >= MaxExposedPorts {
			return nil, fmt.Errorf("%w: %d are exposed on this sandbox; unexpose_port one first", ErrTooManyPorts, len(have))
		}
		if e.Principal != principal {
			e = Exposure{Principal: principal}
		}
		e.Tokens = append(e.Tokens, tokenHash)
		e.Tokens = e.Tokens[max(0, len(e.Tokens)-maxTokensPerPort):]
		b, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("encoding exposure: %w", err)
		}
		return map[string]any{exposurePrefix + strconv.Itoa(port): string(b)}, nil
	})
}

// Unexpose ends port's URLs on the owner's claim (every port's when port is 0) and says
// whether there were any.
func (c *Client) Unexpose(ctx context.Context, namespace, name, owner string, port int) (bool, error) {
	var found bool
	err := c.patchExposures(ctx, namespace, name, owner, func(have map[int]Exposure) (map[string]any, error) {
		drop := map[string]any{}
		for p := range have {
			if port == 0 || p == port {
				drop[exposurePrefix+strconv.Itoa(p)] = nil // a merge patch's null removes the key
			}
		}
		found = len(drop) > 0
		return drop, nil
	})
	return found, err
}

// patchExposures reads the claim from the API (the cache may lag a concurrent change) and
// writes change's annotations with its resourceVersion, retrying on a conflict, so two
// replicas exposing ports of one sandbox at once both land.
func (c *Client) patchExposures(ctx context.Context, namespace, name, owner string, change func(map[int]Exposure) (map[string]any, error)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := c.ownedClaim(ctx, namespace, name, owner)
		if err != nil {
			return err
		}
		annotations, err := change(exposures(obj))
		if err != nil || len(annotations) == 0 {
			return err
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": obj.ResourceVersion, "annotations": annotations}})
		if err != nil {
			return fmt.Errorf("encoding exposure patch: %w", err)
		}
		_, err = c.ext.ExtensionsV1beta1().SandboxClaims(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("recording the exposed port on sandbox claim %q: %w", name, err)
		}
		c.watchNamespace(namespace) // requests through the URL then read the cache
		if c.cache != nil {
			c.cache.markPatched(namespace, name)
		}
		return nil
	})
}

// Exposed returns a claim of this server, whoever owns it, with its exposed ports: a request
// through an exposed URL carries no MCP owner, its token decides. From the watch cache when it
// can; a claim without the owner label is not found.
//
// fresh skips the cache: another replica's expose_port reaches this one's watch a little
// later, so a token the cache does not know yet is asked of the API before it is refused.
func (c *Client) Exposed(ctx context.Context, namespace, name string, fresh bool) (Claim, map[int]Exposure, error) {
	obj, sb, ok := (*extv1beta1.SandboxClaim)(nil), (*sandboxv1beta1.Sandbox)(nil), false
	if c.cache != nil && !fresh {
		obj, sb, ok = c.cache.lookup(namespace, name)
		ok = ok && obj.Labels[c.ownerKey] != "" && !c.cache.deletedHere(namespace, obj.UID) && !c.cache.patchedHere(namespace, name)
	}
	if !ok {
		var err error
		if obj, err = c.serverClaim(ctx, namespace, name); err != nil {
			return Claim{}, nil, err
		}
		c.watchNamespace(namespace)
		if sb, err = c.claimSandbox(ctx, obj); err != nil {
			return Claim{}, nil, err
		}
	}
	return claimWithSandbox(obj, sb), exposures(obj), nil
}

// serverClaim GETs a claim this server made, whoever owns it (a request through a URL it
// handed out carries no MCP owner; its token decides). A claim without the owner label is
// not found.
func (c *Client) serverClaim(ctx context.Context, namespace, name string) (*extv1beta1.SandboxClaim, error) {
	obj, err := c.ext.ExtensionsV1beta1().SandboxClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, &notFoundError{namespace: namespace, name: name}
	}
	if err != nil {
		return nil, fmt.Errorf("getting sandbox claim %q in namespace %q: %w", name, namespace, err)
	}
	if obj.Labels[c.ownerKey] == "" {
		return nil, &notFoundError{namespace: namespace, name: name}
	}
	return obj, nil
}

// claimSandbox GETs the Sandbox bound to obj; nil when none is bound or it does not exist.
func (c *Client) claimSandbox(ctx context.Context, obj *extv1beta1.SandboxClaim) (*sandboxv1beta1.Sandbox, error) {
	if obj.Status.SandboxStatus.Name == "" {
		return nil, nil
	}
	return c.getSandbox(ctx, obj.Namespace, obj.Status.SandboxStatus.Name)
}

// claimWithSandbox is what reaching the sandbox needs: addresses from the Sandbox (none
// when the claim names one that is gone), not readiness.
func claimWithSandbox(obj *extv1beta1.SandboxClaim, sb *sandboxv1beta1.Sandbox) Claim {
	claim := claimFromObject(obj)
	claim.Ready = false
	if sb == nil && claim.SandboxName != "" {
		claim.PodIPs = nil
	}
	fillFromSandbox(&claim, sb)
	return claim
}

// Valid says whether tokenHash is one of the exposure's live tokens.
func (e Exposure) Valid(tokenHash string) bool { return slices.Contains(e.Tokens, tokenHash) }
