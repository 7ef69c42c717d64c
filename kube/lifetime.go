package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// shutdownAfterAnno keeps a claim's lifetime window (create_sandbox's or extend_sandbox's
// shutdown_after_seconds): renewal on use moves the shutdown time to now plus it, from any
// replica and after a restart.
const shutdownAfterAnno = ServerDomain + "/shutdown-after-seconds"

// renewTimeout bounds a renewal PATCH, which runs after the call that prompted it.
const renewTimeout = 10 * time.Second

// Lifetime is how long sandboxes live: renewal on use, within a hard cap from creation.
type Lifetime struct {
	RenewOnUse  bool          // a sandbox in use never reaches its shutdown time
	MaxLifetime time.Duration // no shutdown time later than creation plus this; 0: none
}

// WithLifetime sets renewal on use and the hard cap (default DefaultLifetime).
func WithLifetime(l Lifetime) Option { return func(o *options) { o.lifetime = &l } }

// DefaultLifetime renews on use, for at most DefaultMaxLifetime.
func DefaultLifetime() Lifetime { return Lifetime{RenewOnUse: true, MaxLifetime: DefaultMaxLifetime} }

// ExpiredError is a claim the controller deleted at its shutdown time: "not found", and when.
type ExpiredError struct {
	Namespace, Name string
	At              time.Time
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("sandbox claim %q in namespace %q expired at %s (its shutdown time) and was deleted with its files",
		e.Name, e.Namespace, e.At.UTC().Format(time.RFC3339))
}

func (e *ExpiredError) Unwrap() error { return ErrNotFound }

// Extend moves the owner's claim's shutdown time to now + after, which becomes its window for
// renewal on use too. It refuses a time past the hard cap.
func (c *Client) Extend(ctx context.Context, namespace, name, owner string, after time.Duration) (Claim, error) {
	if after <= 0 {
		return Claim{}, fmt.Errorf("%w: shutdown_after_seconds must be positive", ErrInvalid)
	}
	obj, err := c.ownedClaim(ctx, namespace, name, owner)
	if err != nil {
		return Claim{}, err
	}
	at := c.now().Add(after).UTC().Truncate(time.Second)
	if limit := c.lifetimeCap(obj); !limit.IsZero() && at.After(limit) {
		return Claim{}, c.pastCap(limit)
	}
	patched, err := c.patchLifetime(ctx, obj, at, after)
	if err != nil {
		return Claim{}, err
	}
	return claimFromObject(patched), nil
}

// lifetimeCap is the latest shutdown time the hard cap allows; zero: none. A claim without a
// creation time was never stored by an API server (which always sets one): no cap is known.
func (c *Client) lifetimeCap(obj *extv1beta1.SandboxClaim) time.Time {
	return c.capFrom(obj.CreationTimestamp.Time)
}

// capFrom is the latest shutdown time the hard cap allows a claim created at created; zero: none.
func (c *Client) capFrom(created time.Time) time.Time {
	if c.lifetime.MaxLifetime <= 0 || created.IsZero() {
		return time.Time{}
	}
	return created.Add(c.lifetime.MaxLifetime).UTC().Truncate(time.Second)
}

// pastCap is the one refusal of a shutdown time past the hard cap, whichever call asked for it
// (create_sandbox, extend_sandbox, resume_sandbox or a call that resumes by itself): the cap,
// the deadline it gives this sandbox and what the caller may still ask for.
func (c *Client) pastCap(limit time.Time) error {
	// From now in whole seconds, as shutdown times are: the largest window still accepted.
	left := limit.Sub(c.now().Truncate(time.Second))
	if left <= 0 {
		return fmt.Errorf("%w: a sandbox lives at most %s from its creation (until %s): this one has reached it and is deleted; "+
			"create a new sandbox", ErrInvalid, shortDuration(c.lifetime.MaxLifetime), limit.Format(time.RFC3339))
	}
	return fmt.Errorf("%w: a sandbox lives at most %s from its creation (until %s): shutdown_after_seconds may be at most %d now",
		ErrInvalid, shortDuration(c.lifetime.MaxLifetime), limit.Format(time.RFC3339), int(left/time.Second))
}

// checkCreateLifetime refuses create_sandbox's shutdown_after_seconds past the hard cap, as
// extend_sandbox refuses it (refused rather than shortened: the caller asked for a time it
// would not get, and learns the cap now rather than at a deletion it did not expect).
func (c *Client) checkCreateLifetime(after *time.Duration) error {
	if maxLife := c.lifetime.MaxLifetime; after != nil && maxLife > 0 && *after > maxLife {
		// Before the API server stamps the creation: its cap is at least now plus the cap.
		return c.pastCap(c.now().Add(maxLife).UTC().Truncate(time.Second))
	}
	return nil
}

// createLifetime is a new claim's shutdown time and renewal window for create_sandbox's
// shutdown_after_seconds (nil: none asked for). Under the hard cap "none" means the cap: the
// claim ends at its creation plus the cap, with no window to renew (nothing could move it
// later). Zero time: no lifecycle (no cap, and none asked for). Never past the cap, even for
// a window checkCreateLifetime would refuse.
func (c *Client) createLifetime(now time.Time, after *time.Duration) (time.Time, time.Duration) {
	var at time.Time
	var window time.Duration
	if after != nil {
		at, window = now.Add(*after), *after
	}
	if maxLife := c.lifetime.MaxLifetime; maxLife > 0 && (at.IsZero() || at.After(now.Add(maxLife))) {
		at = now.Add(maxLife)
	}
	if at.IsZero() {
		return time.Time{}, 0
	}
	return at.UTC().Truncate(time.Second), window
}

// patchLifetime sets the shutdown time and the window, guarded by the claim's UID so a
// claim recreated under the same name is never touched.
func (c *Client) patchLifetime(ctx context.Context, obj *extv1beta1.SandboxClaim, at time.Time, window time.Duration) (*extv1beta1.SandboxClaim, error) {
	policy := extv1beta1.ShutdownPolicyDelete
	if obj.Spec.Lifecycle != nil && obj.Spec.Lifecycle.ShutdownPolicy != "" {
		policy = obj.Spec.Lifecycle.ShutdownPolicy
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": obj.UID, "annotations": map[string]string{shutdownAfterAnno: strconv.Itoa(int(window / time.Second))}},
		"spec":     map[string]any{"lifecycle": map[string]any{"shutdownTime": metav1.NewTime(at), "shutdownPolicy": policy}},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding the lifetime patch: %w", err)
	}
	out, err := c.ext.ExtensionsV1beta1().SandboxClaims(obj.Namespace).Patch(ctx, obj.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("moving the shutdown time of sandbox claim %q in namespace %q: %w", obj.Name, obj.Namespace, err)
	}
	if c.cache != nil {
		c.cache.markPatched(obj.Namespace, obj.Name)
	}
	return out, nil
}

// window is the claim's renewal window; zero: it has none (no lifecycle, or made before renewal).
func window(obj *extv1beta1.SandboxClaim) time.Duration {
	n, err := strconv.Atoi(obj.Annotations[shutdownAfterAnno])
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// renewals remembers which claims this process renewed within the last half window, so a busy
// sandbox costs at most one PATCH per half window from this process, whatever its call rate.
// apimachinery's LRU expiring cache does the bounding and the expiry, as for cache_miss.go.
type renewals struct {
	once sync.Once
	lru  *utilcache.LRUExpireCache
}

// maxRenewalsRemembered bounds the claims remembered; past it the least recently renewed go.
const maxRenewalsRemembered = 4096

// claim says whether uid may be renewed now, and if so marks it renewed for every.
func (r *renewals) claim(uid types.UID, every time.Duration) bool {
	r.once.Do(func() { r.lru = utilcache.NewLRUExpireCache(maxRenewalsRemembered) })
	if _, ok := r.lru.Get(uid); ok {
		return false
	}
	r.lru.Add(uid, struct{}{}, every)
	return true
}

// afterUse is the shutdown time a use at now leaves, for a claim whose shutdown time is at with
// renewal window w: at, or now plus w once less than half of w is left, never past limit
// (zero: no cap). Renewal on use moves the claim's time to it; Get tells the caller (Claim.Deadline).
func afterUse(at time.Time, w time.Duration, limit, now time.Time) time.Time {
	if w <= 0 || at.IsZero() || at.Sub(now) >= w/2 {
		return at
	}
	next := now.Add(w).UTC().Truncate(time.Second)
	if !limit.IsZero() && next.After(limit) {
		next = limit
	}
	return next
}

// Deadline is when a claim is deleted after a use now, and the hard cap from its creation,
// which neither use nor extend_sandbox passes.
type Deadline struct {
	At  time.Time // zero: no shutdown time
	Cap time.Time // zero: no cap
}

// deadlineAfterUse applies renewal on use (when on) and the hard cap to cl, as a call on it
// leaves it.
func (c *Client) deadlineAfterUse(cl Claim) Deadline {
	d := Deadline{At: cl.ShutdownAt, Cap: c.capFrom(cl.Created)}
	if c.lifetime.RenewOnUse {
		d.At = afterUse(d.At, cl.ShutdownAfter, d.Cap, c.now())
	}
	return d
}

// renewOnUse moves a used claim's shutdown time to now plus its window once less than half of
// the window is left, never past the hard cap. The PATCH runs after the call, off its path.
func (c *Client) renewOnUse(obj *extv1beta1.SandboxClaim) {
	w := window(obj)
	at := shutdownTime(obj)
	if !c.lifetime.RenewOnUse || w <= 0 || at.IsZero() {
		return
	}
	next := afterUse(at, w, c.lifetimeCap(obj), c.now())
	if !next.After(at) || !c.renewed.claim(obj.UID, w/2) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), renewTimeout)
		defer cancel()
		// A failure leaves the old time; the next use retries after w/2. The owner hears of it:
		// the sandbox goes at the old time if nothing renews it.
		if _, err := c.patchLifetime(ctx, obj, next, w); err != nil {
			c.notify(Notice{Kind: RenewalFailed, Namespace: obj.Namespace, Name: obj.Name, Owner: obj.Labels[c.ownerKey], At: at, Err: err})
		}
	}()
}

// expiredAt says when the controller deleted a claim at its shutdown time, from its
// ClaimExpired Event (kept by the API server for an hour); zero when unknown.
func expiredAt(ctx context.Context, events typedcorev1.EventsGetter, namespace, name string) time.Time {
	if events == nil {
		return time.Time{}
	}
	sel := fields.Set{"involvedObject.kind": "SandboxClaim", "involvedObject.name": name, "reason": extv1beta1.ClaimExpiredReason}
	list, err := events.Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: sel.String()})
	if err != nil {
		return time.Time{}
	}
	var at time.Time
	for _, e := range list.Items {
		if e.InvolvedObject.Name != name || e.Reason != extv1beta1.ClaimExpiredReason {
			continue // a server ignoring the field selector
		}
		for _, t := range []time.Time{e.EventTime.Time, e.LastTimestamp.Time, e.FirstTimestamp.Time, e.CreationTimestamp.Time} {
			if !t.IsZero() {
				if t.After(at) {
					at = t
				}
				break
			}
		}
	}
	return at
}

// notFoundOrExpired is the not-found error for a claim, saying when it expired if it did.
func (c *Client) notFoundOrExpired(ctx context.Context, namespace, name string) error {
	if at := expiredAt(ctx, c.events, namespace, name); !at.IsZero() {
		return &ExpiredError{Namespace: namespace, Name: name, At: at}
	}
	return &notFoundError{namespace: namespace, name: name}
}

// shortDuration prints 24h rather than 24h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
