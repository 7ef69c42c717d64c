package kube

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// AuditReason is the reason of the Events Audit records.
const AuditReason = "MCPToolCall"

// eventSource names this server on its Events.
const eventSource = "k8s-sandbox-mcp"

// The rate of audit Events per claim and event type: a burst, then one per 5 minutes (the
// values client-go's recorder uses by default, set here so that both filters below agree).
const (
	auditBurst = 25
	auditQPS   = 1. / 300.
	// auditKeys bounds the claims whose buckets are remembered (client-go's LRU size).
	auditKeys = 4096
)

// newAuditor sends Events through client-go's recorder, whose correlator does the rate limiting
// the API server needs from a busy client: a token bucket per source and object and aggregation
// of similar events into one with a count.
//
// The same bucket is applied before the recorder: its correlator computes a strategic merge
// patch for every Event before its spam filter drops it, which was 7% of the server's CPU under
// item 4's load (one Event per call, nearly all dropped). With the same parameters the Events
// let through are the ones the recorder would have sent.
func newAuditor(events typedcorev1.EventsGetter) (record.EventRecorder, func()) {
	b := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{BurstSize: auditBurst, QPS: auditQPS, LRUCacheSize: auditKeys}))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.Events("")})
	rec := b.NewRecorder(runtime.NewScheme(), corev1.EventSource{Component: eventSource})
	return newSpamFiltered(rec, clock.RealClock{}), b.Shutdown
}

// spamFiltered drops the Events the recorder's spam filter would drop, before the recorder.
type spamFiltered struct {
	record.EventRecorder
	spam *record.EventSourceObjectSpamFilter
}

func newSpamFiltered(rec record.EventRecorder, clk clock.PassiveClock) spamFiltered {
	return spamFiltered{EventRecorder: rec, spam: record.NewEventSourceObjectSpamFilter(auditKeys, auditBurst, auditQPS, clk, spamKey)}
}

// Event is the only method Audit calls; obj is always an ObjectReference there.
func (f spamFiltered) Event(obj runtime.Object, eventtype, reason, message string) {
	if ref, ok := obj.(*corev1.ObjectReference); ok && f.spam.Filter(&corev1.Event{InvolvedObject: *ref, Type: eventtype}) {
		return
	}
	f.EventRecorder.Event(obj, eventtype, reason, message)
}

// spamKey is the recorder's key less the source, which is always this server.
func spamKey(e *corev1.Event) string {
	o := e.InvolvedObject
	return strings.Join([]string{o.Kind, o.Namespace, o.Name, string(o.UID), o.APIVersion, e.Type}, "\x00")
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
