package kube

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
)

// awaitSandbox reads sb again until done holds or timeout passes, and returns the last version
// it saw. It polls with the claim waiter's backoff (100 ms doubling to 2 s) rather than
// watching: a suspension or resume is rare, and the Sandbox has no terminal state a watch
// would have to interpret beyond done. A Sandbox that is gone is ErrNotFound.
func (c *Client) awaitSandbox(ctx context.Context, sb *sandboxv1beta1.Sandbox, timeout time.Duration,
	done func(*sandboxv1beta1.Sandbox) bool, progress func(string)) (*sandboxv1beta1.Sandbox, error) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	backoff, last, state := minBackoff, sb, ""
	for {
		if done(last) {
			return last, nil
		}
		ready := meta.FindStatusCondition(last.Status.Conditions, conditionReady)
		if s := describe(ready, last.Name); s != state {
			state = s
			progress("waiting for sandbox: " + s)
		}
		if !sleep(wctx, &backoff) {
			if err := ctx.Err(); err != nil {
				return last, fmt.Errorf("waiting for sandbox %q: %w", sb.Name, context.Cause(ctx))
			}
			return last, fmt.Errorf("%w: sandbox %q not ready within %s (last state: %s)", ErrTimeout, sb.Name, timeout, state)
		}
		got, err := c.getSandbox(wctx, sb.Namespace, sb.Name)
		switch {
		case err != nil && wctx.Err() != nil:
			continue // the deadline, reported above
		case err != nil && !retryable(err):
			return last, err
		case err != nil:
			continue
		case got == nil || got.UID != sb.UID:
			return last, fmt.Errorf("%w: sandbox %q was deleted while waiting for it", ErrNotFound, sb.Name)
		}
		last = got
	}
}
