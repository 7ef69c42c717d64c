package kube

import (
	"time"

	"k8s.io/client-go/tools/cache"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// NoticeKind says what happened to a claim outside any call.
type NoticeKind int

const (
	// RenewalFailed: renewal on use could not move the shutdown time, so the old one stands
	// until a later call renews it or extend_sandbox moves it.
	RenewalFailed NoticeKind = iota + 1
	// Expired: the controller deleted the claim at its shutdown time.
	Expired
)

// Notice is something that happened to one of this server's claims outside any call, which
// its owner may want to hear; the server tells the owner's MCP sessions.
type Notice struct {
	Kind            NoticeKind
	Namespace, Name string
	Owner           string
	At              time.Time // the shutdown time: the one that stands (RenewalFailed), or the one reached (Expired)
	Err             error     // RenewalFailed: why
}

// WithNotices has f called with every Notice, from the goroutine that saw it (a renewal's, a
// watch's): f must not block. Expiries are seen only in namespaces the watch cache watches.
func WithNotices(f func(Notice)) Option { return func(o *options) { o.notices = f } }

func (c *Client) notify(n Notice) {
	if c.notices != nil {
		c.notices(n)
	}
}

// claimDeleted reports a claim of ours that the watch saw go at or after its shutdown time: the
// controller's expiry, not a delete_sandbox (which comes before it).
func (w *watchCache) claimDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	claim, ok := obj.(*extv1beta1.SandboxClaim)
	if !ok || w.notices == nil {
		return
	}
	at := shutdownTime(claim)
	if at.IsZero() || w.now().Before(at) {
		return
	}
	w.notices(Notice{Kind: Expired, Namespace: claim.Namespace, Name: claim.Name, Owner: claim.Labels[w.ownerKey], At: at})
}
