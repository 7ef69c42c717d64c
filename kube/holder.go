package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// A process that serves a fixed owner (several stdio servers may share one, e.g. two sessions
// of one configuration, or a restart overlapping the old process) says it is alive with a
// coordination.k8s.io Lease that it renews, the way Kubernetes' own components say so (node
// heartbeats, leader election). Before one such process releases the owner's sandboxes at its
// end, it asks whether another live process still holds the owner: the sandboxes are then
// that process's to use, and the last one out releases them. A Lease not renewed within its
// duration is a process that died without releasing; its sandboxes are released by the next
// process of the owner to end.
const (
	// HoldDuration is how long a holder's Lease stays live without a renewal.
	HoldDuration = 60 * time.Second
	// holdRenewEvery renews well inside HoldDuration: two renewals may fail before it lapses.
	holdRenewEvery = HoldDuration / 3
	holdTimeout    = 10 * time.Second
	holderLabel    = ServerDomain + "/holder"
	holderPrefix   = "k8s-sandbox-mcp-holder-"
)

// ErrNoLeases means this client cannot hold Leases (no client, or RBAC refuses them).
var ErrNoLeases = errors.New("cannot hold a Lease")

// Hold is this process's live claim on an owner, renewed until Release.
type Hold struct {
	client    coordinationclient.LeasesGetter
	leases    coordinationclient.LeaseInterface // in namespace
	namespace string
	name      string
	owner     string
	ownerKey  string
	now       func() time.Time
	stop      context.CancelFunc
	done      chan struct{}
	releaseMu sync.Once
}

// Hold creates this process's Lease on owner in namespace and renews it in the background.
// An error wrapping ErrNoLeases means the Lease could not be made (RBAC, no API); the caller
// then cannot tell whether another process is using the owner's sandboxes.
func (c *Client) Hold(ctx context.Context, namespace, owner string) (*Hold, error) {
	if c.leases == nil {
		return nil, fmt.Errorf("%w: no coordination.k8s.io client", ErrNoLeases)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	h := &Hold{client: c.leases, leases: c.leases.Leases(namespace), namespace: namespace, name: holderPrefix + hex.EncodeToString(b), owner: owner,
		ownerKey: c.ownerKey, now: c.now, done: make(chan struct{})}
	cctx, cancel := context.WithTimeout(ctx, holdTimeout)
	defer cancel()
	if _, err := h.leases.Create(cctx, h.lease(), metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("%w %s in namespace %q: %w", ErrNoLeases, h.name, namespace, err)
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	h.stop = stop
	go h.renew(rctx)
	return h, nil
}

func (h *Hold) lease() *coordinationv1.Lease {
	now := metav1.NewMicroTime(h.now())
	secs := int32(HoldDuration / time.Second)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: h.name,
			Labels: map[string]string{h.ownerKey: h.owner, holderLabel: "true", createdByLabel: createdByValue}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &h.name, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
	}
}

func (h *Hold) renew(ctx context.Context) {
	defer close(h.done)
	t := time.NewTicker(holdRenewEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// A failed renewal is retried on the next tick; a Lease deleted meanwhile is made again.
		rctx, cancel := context.WithTimeout(ctx, holdTimeout)
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"renewTime": metav1.NewMicroTime(h.now())}})
		if _, err := h.leases.Patch(rctx, h.name, types.MergePatchType, patch, metav1.PatchOptions{}); apierrors.IsNotFound(err) {
			_, _ = h.leases.Create(rctx, h.lease(), metav1.CreateOptions{})
		}
		cancel()
	}
}

// OthersAlive counts the live Leases of other processes holding the owner, and deletes the
// ones that lapsed (processes that died). Called at the end, before releasing in namespaces:
// another process of the owner holds its Lease in its own default namespace, which may be any
// of those (or, with other settings, none of them: a cluster-wide list finds it where RBAC
// allows one).
func (h *Hold) OthersAlive(ctx context.Context, namespaces ...string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, holdTimeout)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: labels.Set{h.ownerKey: h.owner, holderLabel: "true"}.String()}
	var found []coordinationv1.Lease
	if list, err := h.client.Leases(metav1.NamespaceAll).List(ctx, sel); err == nil {
		found = list.Items
	} else {
		for _, ns := range append([]string{h.namespace}, namespaces...) {
			list, err := h.client.Leases(ns).List(ctx, sel)
			if err != nil {
				return 0, fmt.Errorf("listing the holders of owner %q in namespace %q: %w", h.owner, ns, err)
			}
			found = append(found, list.Items...)
		}
	}
	alive, seen := 0, map[string]bool{} // a Lease found twice (namespaces listed twice)
	for i := range found {
		l := &found[i]
		key := l.Namespace + "/" + l.Name
		switch {
		case seen[key] || (l.Name == h.name && l.Namespace == h.namespace):
		case leaseLive(l, h.now()):
			alive++
		default:
			_ = h.client.Leases(l.Namespace).Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &l.UID}})
		}
		seen[key] = true
	}
	return alive, nil
}

// leaseLive says whether l was renewed within its duration as of now.
func leaseLive(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return false
	}
	return now.Before(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
}

// Release stops the renewal and deletes this process's Lease. Safe to call more than once.
func (h *Hold) Release(ctx context.Context) {
	h.releaseMu.Do(func() {
		h.stop()
		<-h.done
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), holdTimeout)
		defer cancel()
		_ = h.leases.Delete(ctx, h.name, metav1.DeleteOptions{})
	})
}
