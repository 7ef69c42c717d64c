package kube

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// AuditReason is the reason of the Events Audit records.
const AuditReason = "MCPToolCall"

// eventSource names this server on its Events.
const eventSource = "k8s-sandbox-mcp"

// newAuditor sends Events through client-go's recorder, whose correlator does the rate limiting
// the API server needs from a busy client: a token bucket per source and object (25 at once,
// then one per 5 minutes) and aggregation of similar events into one with a count.
func newAuditor(events typedcorev1.EventsGetter) (record.EventRecorder, func()) {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.Events("")})
	return b.NewRecorder(runtime.NewScheme(), corev1.EventSource{Component: eventSource}), b.Shutdown
}

// Audit records a tool call on the owner's claim as a Kubernetes Event, so `kubectl describe
// sandboxclaim` shows who did what: the principal, the tool, the outcome and the duration,
// never arguments or output. It never blocks and asks nothing of the API but the Event: the
// claim comes from the watch cache, and a call on a claim the cache does not hold as the
// owner's (a wrong or foreign name) leaves no Event, except a successful delete, whose claim
// may already have left the cache.
func (c *Client) Audit(namespace, name, owner, principal, tool, outcome string, took time.Duration) {
	if c.recorder == nil || name == "" {
		return
	}
	ref := &corev1.ObjectReference{Kind: "SandboxClaim", APIVersion: extv1beta1.GroupVersion.String(), Namespace: namespace, Name: name}
	var obj *extv1beta1.SandboxClaim
	if c.cache != nil {
		obj, _, _ = c.cache.lookup(namespace, name)
	}
	switch {
	case obj != nil && obj.Labels[c.ownerKey] == owner:
		ref.UID, ref.ResourceVersion = obj.UID, obj.ResourceVersion
	case obj == nil && tool == "delete_sandbox" && outcome == "ok":
	default:
		return
	}
	kind := corev1.EventTypeNormal
	if outcome != "ok" {
		kind = corev1.EventTypeWarning
	}
	c.recorder.Event(ref, kind, AuditReason, fmt.Sprintf("%s by %s: %s in %.3fs", tool, principal, outcome, took.Seconds()))
}
