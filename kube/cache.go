package kube

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	sandboxclientset "sigs.k8s.io/agent-sandbox/clients/k8s/clientset/versioned"
	extclientset "sigs.k8s.io/agent-sandbox/clients/k8s/extensions/clientset/versioned"
	extinformers "sigs.k8s.io/agent-sandbox/clients/k8s/extensions/informers/externalversions"
	extlisters "sigs.k8s.io/agent-sandbox/clients/k8s/extensions/listers/api/v1beta1"
	sandboxinformers "sigs.k8s.io/agent-sandbox/clients/k8s/informers/externalversions"
	sandboxlisters "sigs.k8s.io/agent-sandbox/clients/k8s/listers/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// claimUIDLabel is what the controller puts on a Sandbox it bound to a claim.
const claimUIDLabel = "agents.x-k8s.io/claim-uid"

// watchCache keeps, per namespace the server uses, a watch of the claims it labelled and of
// the Sandboxes bound to claims, so that every exec and file call reads the claim (for the
// owner check) and its Sandbox (for the address) from memory instead of two API GETs.
// It only ever answers "yes, here it is": a miss, an unsynced or a forbidden watch sends the
// caller to the API, which stays the authority for "not found".
type watchCache struct {
	ext      extclientset.Interface
	core     sandboxclientset.Interface
	ownerKey string

	mu     sync.Mutex
	ns     map[string]*nsWatch
	ctx    context.Context
	cancel context.CancelFunc
}

type nsWatch struct {
	claims    extlisters.SandboxClaimNamespaceLister
	sandboxes sandboxlisters.SandboxNamespaceLister
	synced    []cache.InformerSynced
	failed    chan struct{} // closed when a watch is refused (RBAC): the namespace stays uncached
	once      sync.Once
}

func newWatchCache(ext extclientset.Interface, core sandboxclientset.Interface, ownerKey string) *watchCache {
	ctx, cancel := context.WithCancel(context.Background())
	return &watchCache{ext: ext, core: core, ownerKey: ownerKey, ns: map[string]*nsWatch{}, ctx: ctx, cancel: cancel}
}

// lookup returns the claim and its Sandbox when both are in a synced cache. It starts the
// namespace's watches on first use and never waits for them.
func (w *watchCache) lookup(namespace, name string) (*extv1beta1.SandboxClaim, *sandboxv1beta1.Sandbox, bool) {
	nw := w.watch(namespace)
	if nw == nil || !nw.ready() {
		return nil, nil, false
	}
	claim, err := nw.claims.Get(name)
	if err != nil || claim.Status.SandboxStatus.Name == "" {
		return nil, nil, false
	}
	sb, err := nw.sandboxes.Get(claim.Status.SandboxStatus.Name)
	// The UID check rejects a Sandbox of an earlier claim that had the same name.
	if err != nil || sb.Labels[claimUIDLabel] != string(claim.UID) {
		return nil, nil, false
	}
	return claim, sb, true
}

func (nw *nsWatch) ready() bool {
	select {
	case <-nw.failed:
		return false
	default:
	}
	for _, s := range nw.synced {
		if !s() {
			return false
		}
	}
	return true
}

func (w *watchCache) watch(namespace string) *nsWatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx.Err() != nil {
		return nil
	}
	if nw, ok := w.ns[namespace]; ok {
		return nw
	}
	ctx, cancel := context.WithCancel(w.ctx)
	nw := &nsWatch{failed: make(chan struct{})}
	ef := extinformers.NewSharedInformerFactoryWithOptions(w.ext, 0, extinformers.WithNamespace(namespace),
		extinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = w.ownerKey }))
	sf := sandboxinformers.NewSharedInformerFactoryWithOptions(w.core, 0, sandboxinformers.WithNamespace(namespace),
		sandboxinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = claimUIDLabel }))
	ci := ef.Extensions().V1beta1().SandboxClaims()
	si := sf.Agents().V1beta1().Sandboxes()
	nw.claims = ci.Lister().SandboxClaims(namespace)
	nw.sandboxes = si.Lister().Sandboxes(namespace)
	// A refused watch would otherwise be retried (and logged) forever; give up on the namespace.
	onError := func(_ *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			nw.once.Do(func() { close(nw.failed); cancel() })
		}
	}
	for _, inf := range []cache.SharedIndexInformer{ci.Informer(), si.Informer()} {
		_ = inf.SetWatchErrorHandler(onError)
		nw.synced = append(nw.synced, inf.HasSynced)
	}
	ef.Start(ctx.Done())
	sf.Start(ctx.Done())
	w.ns[namespace] = nw
	return nw
}

// close stops every watch.
func (w *watchCache) close() {
	w.cancel()
}
