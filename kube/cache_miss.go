package kube

import (
	"context"
	"errors"
	"time"

	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"

	"k8s.io/apimachinery/pkg/types"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// A synced watch also knows when the caller has no such claim, which saves the API read (and
// its rate-limiter token) that a wrong or deleted name would otherwise cost on every call:
//   - a claim in the cache with another owner's label is not the caller's (owner labels are
//     set at creation; a change would arrive through the watch);
//   - a name the API did not find after the watch had synced stays "not found" for
//     absentTTL: any claim created since then arrives through the watch and the cache answers
//     for it first. The TTL bounds what a silently stalled watch could hide.
const (
	absentTTL = 5 * time.Second
	// maxForgotten bounds the names and UIDs remembered per namespace (least recently added go first).
	maxForgotten = 1024
)

// forgotten is what a namespace's watch may not show yet: names the API did not find while
// it was synced (string keys) and claims this process deleted (types.UID keys), each for
// absentTTL. apimachinery's LRU expiring cache does the bounding and the expiry.
func newForgotten(now func() time.Time) *utilcache.LRUExpireCache {
	return utilcache.NewLRUExpireCacheWithClock(maxForgotten, clockFunc(now))
}

type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }

// cacheMiss is what the cache knows about a claim lookup could not answer.
type cacheMiss struct {
	nw      *nsWatch // the namespace's watch, synced before the API read; nil: not watched
	name    string
	gone    bool      // the caller has no claim by this name: answer not found without the API
	expired time.Time // with gone: when it expired, if the API said so
}

// miss says whether a synced watch shows that owner has no claim called name.
func (w *watchCache) miss(namespace, name, owner string) cacheMiss {
	nw := w.use(namespace, false)
	if nw == nil || !nw.ready() {
		return cacheMiss{}
	}
	m := cacheMiss{nw: nw, name: name}
	if claim, err := nw.claims.Get(name); err == nil {
		m.gone = claim.Labels[w.ownerKey] != owner
	} else {
		var v any
		v, m.gone = nw.forgotten.Get(name)
		m.expired, _ = v.(time.Time)
	}
	return m
}

// remember records that the API found no claim of the caller's by this name, and when it
// expired if it did.
func (m cacheMiss) remember(err error) {
	if m.nw == nil {
		return
	}
	var v any = struct{}{}
	if e := (*ExpiredError)(nil); errors.As(err, &e) {
		v = e.At
	}
	m.nw.forgotten.Add(m.name, v, absentTTL)
}

// fromCache returns the owner's claim and its Sandbox when the watch cache has both, and
// otherwise what the cache knows about the miss.
func (c *Client) fromCache(namespace, name, owner string) (*extv1beta1.SandboxClaim, *sandboxv1beta1.Sandbox, cacheMiss) {
	if c.cache == nil || owner == "" {
		return nil, nil, cacheMiss{}
	}
	if obj, sb, ok := c.cache.lookup(namespace, name); ok && obj.Labels[c.ownerKey] == owner {
		if c.cache.deletedHere(namespace, obj.UID) {
			return nil, nil, cacheMiss{gone: true}
		}
		return obj, sb, cacheMiss{}
	}
	return nil, nil, c.cache.miss(namespace, name, owner)
}

// ownedClaimAfter reads the claim from the API unless the cache already knows the caller has
// none by that name, and remembers a "not found" the API gave while the watch was synced.
func (c *Client) ownedClaimAfter(ctx context.Context, miss cacheMiss, namespace, name, owner string) (*extv1beta1.SandboxClaim, error) {
	if miss.gone && !miss.expired.IsZero() {
		return nil, &ExpiredError{Namespace: namespace, Name: name, At: miss.expired}
	}
	if miss.gone {
		return nil, &notFoundError{namespace: namespace, name: name}
	}
	obj, err := c.ownedClaim(ctx, namespace, name, owner)
	if errors.Is(err, ErrNotFound) {
		miss.remember(err)
	}
	return obj, err
}

// A claim this process deleted stays in the cache until the watch delivers the deletion, a
// few milliseconds later; a status or exec call in between must already see it gone, as the
// API does. Remembered by UID, so a new claim of the same name is not hidden.
func (w *watchCache) markDeleted(namespace string, uid types.UID) {
	if nw := w.use(namespace, false); nw != nil {
		nw.forgotten.Add(uid, struct{}{}, absentTTL)
	}
}

func (w *watchCache) deletedHere(namespace string, uid types.UID) bool {
	nw := w.use(namespace, false)
	if nw == nil {
		return false
	}
	_, ok := nw.forgotten.Get(uid)
	return ok
}

// patchedKey marks a claim this process just patched (expose_port): for absentTTL its reads
// go to the API, so the process reads its own write before the watch delivers it.
type patchedKey string

func (w *watchCache) markPatched(namespace, name string) {
	if nw := w.use(namespace, false); nw != nil {
		nw.forgotten.Add(patchedKey(name), struct{}{}, absentTTL)
	}
}

func (w *watchCache) patchedHere(namespace, name string) bool {
	nw := w.use(namespace, false)
	if nw == nil {
		return false
	}
	_, ok := nw.forgotten.Get(patchedKey(name))
	return ok
}
