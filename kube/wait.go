package kube

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	claimsv1beta1 "sigs.k8s.io/agent-sandbox/clients/k8s/extensions/clientset/versioned/typed/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

const (
	reasonWarmPoolNotFound = "WarmPoolNotFound"
	reasonTemplateNotFound = "TemplateNotFound"

	minBackoff = 100 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// terminalReadyReasons are Ready=False reasons the controller never recovers from
// (Python SDK TERMINAL_CLAIM_READY_REASONS plus TemplateNotFound).
var terminalReadyReasons = map[string]bool{
	reasonTemplateNotFound:      true,
	"InvalidMetadata":           true,
	"EnvVarsInjectionRejected":  true,
	"VolumeClaimTemplatesError": true,
	"ClaimExpired":              true,
	"SandboxExpired":            true,
}

// refusedByTemplatePolicy: a claim env variable that the template already sets, under the
// Allowed policy, is refused with a plain error (agent-sandbox v0.5.6 injectEnvs), which the
// controller reports as ReconcilerError and retries forever. Nothing but a new claim changes it.
func refusedByTemplatePolicy(c metav1.Condition) bool {
	return c.Reason == "ReconcilerError" && strings.Contains(c.Message, "is not allowed by the template policy")
}

// claimWaiter follows one claim by watch until it is Ready and bound, fails, or time runs out.
type claimWaiter struct {
	claims   claimsv1beta1.SandboxClaimInterface
	name     string
	rv       string // resume point for the next watch
	progress func(string)
	state    string // last progress message, to report changes only
}

// streamEnd says why a watch stream stopped without a result.
type streamEnd int

const (
	streamClosed streamEnd = iota // server closed or timed out the stream: resume from rv
	streamResync                  // error event (e.g. 410 Gone): GET the claim, then resume
)

func (w *claimWaiter) wait(ctx context.Context, timeout time.Duration) (*extv1beta1.SandboxClaim, error) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	backoff := minBackoff
	resync := false
	for {
		if wctx.Err() != nil {
			return nil, w.deadlineErr(ctx, timeout)
		}
		if resync {
			done, retry, err := w.resync(wctx)
			if done != nil || err != nil {
				return done, err
			}
			if retry {
				sleep(wctx, &backoff)
				continue
			}
			resync = false
		}
		watcher, err := w.claims.Watch(wctx, w.listOptions(wctx))
		if err != nil {
			switch {
			case wctx.Err() != nil:
			case apierrors.IsGone(err) || apierrors.IsResourceExpired(err):
				resync = true
			case !retryable(err):
				return nil, fmt.Errorf("watching sandbox claim %q: %w", w.name, err)
			default:
				sleep(wctx, &backoff)
			}
			continue
		}
		done, end, events, err := w.drain(wctx, watcher)
		watcher.Stop()
		if done != nil || err != nil {
			return done, err
		}
		if end == streamResync {
			resync = true
		}
		if events > 0 {
			backoff = minBackoff
		} else {
			sleep(wctx, &backoff) // a stream that ends at once must not spin
		}
	}
}

func (w *claimWaiter) listOptions(ctx context.Context) metav1.ListOptions {
	opts := metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", w.name).String(),
		ResourceVersion: w.rv,
	}
	if dl, ok := ctx.Deadline(); ok {
		secs := max(int64(math.Ceil(time.Until(dl).Seconds())), 1)
		opts.TimeoutSeconds = &secs
	}
	return opts
}

// drain reads one stream. It returns the ready claim, or a terminal error, or why the stream ended.
func (w *claimWaiter) drain(ctx context.Context, watcher watch.Interface) (*extv1beta1.SandboxClaim, streamEnd, int, error) {
	events := 0
	for {
		select {
		case <-ctx.Done():
			return nil, streamClosed, events, nil
		case ev, ok := <-watcher.ResultChan():
			if !ok {
				return nil, streamClosed, events, nil
			}
			events++
			if ev.Type == watch.Error {
				return nil, streamResync, events, nil
			}
			claim, ok := ev.Object.(*extv1beta1.SandboxClaim)
			if !ok || claim.Name != w.name { // field selectors are not honoured by every client
				continue
			}
			if claim.ResourceVersion != "" {
				w.rv = claim.ResourceVersion
			}
			switch ev.Type {
			case watch.Deleted:
				return nil, streamClosed, events, &ClaimFailure{Claim: w.name, Reason: "Deleted",
					Message: "the sandbox claim was deleted while waiting for it to become ready"}
			case watch.Added, watch.Modified:
				done, err := w.observe(claim)
				if err != nil {
					return nil, streamClosed, events, err
				}
				if done {
					return claim, streamClosed, events, nil
				}
			}
		}
	}
}

// resync GETs the claim after the watch lost its place, and resumes from its version.
// retry is set when the GET failed in a way that may pass.
func (w *claimWaiter) resync(ctx context.Context) (done *extv1beta1.SandboxClaim, retry bool, err error) {
	claim, err := w.claims.Get(ctx, w.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, &ClaimFailure{Claim: w.name, Reason: "Deleted",
			Message: "the sandbox claim was deleted while waiting for it to become ready"}
	case err != nil && retryable(err):
		return nil, true, nil
	case err != nil:
		return nil, false, fmt.Errorf("getting sandbox claim %q: %w", w.name, err)
	}
	w.rv = claim.ResourceVersion
	ok, err := w.observe(claim)
	if err != nil || !ok {
		return nil, false, err
	}
	return claim, false, nil
}

// observe checks one version of the claim: done when Ready=True and bound to a Sandbox.
func (w *claimWaiter) observe(claim *extv1beta1.SandboxClaim) (bool, error) {
	for _, cond := range claim.Status.Conditions {
		terminal := cond.Reason == reasonWarmPoolNotFound ||
			(cond.Type == conditionReady && cond.Status == metav1.ConditionFalse &&
				(terminalReadyReasons[cond.Reason] || refusedByTemplatePolicy(cond)))
		if terminal {
			return false, &ClaimFailure{Claim: w.name, Reason: cond.Reason, Message: cond.Message}
		}
	}
	ready := meta.FindStatusCondition(claim.Status.Conditions, conditionReady)
	if ready != nil && ready.Status == metav1.ConditionTrue && claim.Status.SandboxStatus.Name != "" {
		return true, nil
	}
	w.report(describe(ready, claim.Status.SandboxStatus.Name))
	return false, nil
}

func (w *claimWaiter) report(state string) {
	if state == w.state {
		return
	}
	w.state = state
	w.progress("waiting for sandbox: " + state)
}

func describe(ready *metav1.Condition, sandbox string) string {
	switch {
	case ready == nil:
		return "pending"
	case ready.Status == metav1.ConditionTrue && sandbox == "":
		return "ready, waiting for the claim to be bound"
	case ready.Message == "":
		return ready.Reason
	case ready.Reason == "":
		return ready.Message
	default:
		return ready.Reason + ": " + ready.Message
	}
}

func (w *claimWaiter) deadlineErr(parent context.Context, timeout time.Duration) error {
	if err := parent.Err(); err != nil {
		return fmt.Errorf("waiting for sandbox claim %q: %w", w.name, context.Cause(parent))
	}
	last := w.state
	if last == "" {
		last = "no status yet"
	}
	return fmt.Errorf("%w: sandbox claim %q not ready within %s (last state: %s)", ErrTimeout, w.name, timeout, last)
}

// retryable reports whether a failed watch/get may succeed later; RBAC and malformed
// requests will not.
func retryable(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true // transport errors
	}
	switch {
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err), apierrors.IsBadRequest(err),
		apierrors.IsInvalid(err), apierrors.IsMethodNotSupported(err), apierrors.IsNotFound(err):
		return false
	}
	return true
}

// sleep waits for the current backoff, doubles it, and reports whether ctx is still alive.
func sleep(ctx context.Context, backoff *time.Duration) bool {
	t := time.NewTimer(*backoff)
	defer t.Stop()
	*backoff = min(*backoff*2, maxBackoff)
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
