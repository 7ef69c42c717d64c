package kube

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
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

// ourSandboxes selects the Sandboxes bound to claims this server created: the controller
// copies the claim's created-by label onto the Sandbox it binds (cold or adopted from a warm
// pool). Without the second term every claimed Sandbox of a namespace would be cached, however
// many other clients' claims it holds.
const ourSandboxes = claimUIDLabel + "," + createdByLabel + "=" + createdByValue

// Bounds of the watch cache. Each watched namespace costs two API server watches and the
// memory of its claims and Sandboxes, so callers must not be able to grow it at will.
const (
	// DefaultMaxWatchedNamespaces caps the namespaces watched at once; beyond it the least
	// recently used one is stopped.
	DefaultMaxWatchedNamespaces = 64
	// DefaultWatchIdleTimeout stops the watches of a namespace no call has used for this long.
	DefaultWatchIdleTimeout = 15 * time.Minute
)

// Option tunes a Client built by New.
type Option func(*options)

type options struct {
	maxWatched int
	idle       time.Duration
	apiUser    string // for APIError messages
	qps, burst int    // ratelimit.go
	metadata   *MetadataPolicy
	lifetime   *Lifetime
	// pauseLifetime: Suspend stops the claim's lifetime clock (WithSuspendPausesLifetime).
	pauseLifetime bool
	notices       func(Notice) // notice.go
}

func defaultOptions() options {
	return options{maxWatched: DefaultMaxWatchedNamespaces, idle: DefaultWatchIdleTimeout, qps: DefaultQPS, burst: DefaultBurst}
}

// WithMaxWatchedNamespaces sets how many namespaces the watch cache may watch at once
// (default DefaultMaxWatchedNamespaces); 0 turns the cache off and every read goes to the API.
func WithMaxWatchedNamespaces(n int) Option { return func(o *options) { o.maxWatched = n } }

// WithWatchIdleTimeout sets how long a namespace's watches outlive its last use
// (default DefaultWatchIdleTimeout).
func WithWatchIdleTimeout(d time.Duration) Option { return func(o *options) { o.idle = d } }

func (o options) validate() error {
	if o.maxWatched < 0 {
		return fmt.Errorf("%w: at most %d watched namespaces: must be 0 (no watch cache) or more", ErrInvalid, o.maxWatched)
	}
	if o.idle <= 0 {
		return fmt.Errorf("%w: watch idle timeout %s: must be positive", ErrInvalid, o.idle)
	}
	return o.validateRateLimit()
}

// watchCache keeps, per namespace where this server has claims, a watch of the claims it
// labelled and of the Sandboxes bound to claims, so that every exec and file call reads the
// claim (for the owner check) and its Sandbox (for the address) from memory instead of two
// API GETs. It only ever answers "yes, here it is": a miss, an unwatched namespace, an
// unsynced or a forbidden watch sends the caller to the API, which stays the authority for
// "not found".
//
// A lookup never starts a watch: only observe does, which the Client calls after it created a
// claim or an API read found one the caller owns. So namespace names made up by callers cost
// one API GET each and nothing that stays. At most max namespaces are watched; the least
// recently used is stopped to make room, and any unused for idle is stopped by a sweep that
// runs while something is watched (and on every use of the cache).
type watchCache struct {
	ext      extclientset.Interface
	core     sandboxclientset.Interface
	ownerKey string
	max      int
	idle     time.Duration
	now      func() time.Time // replaceable in tests
	notices  func(Notice)     // nil: deletions are not reported

	mu       sync.Mutex
	ns       map[string]*list.Element // values are *nsWatch
	lru      *list.List               // front: most recently used
	closed   bool
	sweeping bool          // the idle sweep is running
	done     chan struct{} // closed by close: ends the sweep
}

type nsWatch struct {
	namespace string
	used      time.Time
	claims    extlisters.SandboxClaimNamespaceLister
	sandboxes sandboxlisters.SandboxNamespaceLister
	synced    []cache.InformerSynced
	stores    []cache.Store // claims, then Sandboxes: what the cache holds, for its size
	failed    chan struct{} // closed when a watch is refused (RBAC): the namespace stays uncached
	once      sync.Once
	cancel    context.CancelFunc
	factories []interface{ Shutdown() }
	stopped   chan struct{} // closed once the informers' goroutines have returned

	forgotten *utilcache.LRUExpireCache // cache_miss.go
}

func newWatchCache(ext extclientset.Interface, core sandboxclientset.Interface, ownerKey string, o options) *watchCache {
	return &watchCache{ext: ext, core: core, ownerKey: ownerKey, max: o.maxWatched, idle: o.idle, now: time.Now, notices: o.notices,
		ns: map[string]*list.Element{}, lru: list.New(), done: make(chan struct{})}
}

// lookup returns the claim and its Sandbox when both are in a synced cache. It never starts
// or waits for a watch.
func (w *watchCache) lookup(namespace, name string) (*extv1beta1.SandboxClaim, *sandboxv1beta1.Sandbox, bool) {
	nw := w.use(namespace, false)
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

// observe marks namespace as one where this server has a claim, starting its watches if
// they are not running.
func (w *watchCache) observe(namespace string) {
	w.use(namespace, true)
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

// use returns the namespace's watch, marked as just used, after stopping idle ones. When
// start is set and the namespace is not watched, it starts watching it, stopping the least
// recently used namespaces beyond the cap.
func (w *watchCache) use(namespace string, start bool) *nsWatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	now := w.now()
	w.expireLocked(now)
	if el, ok := w.ns[namespace]; ok {
		nw := el.Value.(*nsWatch)
		nw.used = now
		w.lru.MoveToFront(el)
		return nw
	}
	if !start {
		return nil
	}
	for w.lru.Len() > 0 && w.lru.Len() >= w.max {
		w.stopLocked(w.lru.Back())
	}
	nw := w.start(namespace)
	nw.used = now
	w.ns[namespace] = w.lru.PushFront(nw)
	if !w.sweeping {
		w.sweeping = true
		go w.sweep()
	}
	return nw
}

// sweep stops idle namespaces even when no call comes; it ends with the last watch.
func (w *watchCache) sweep() {
	t := time.NewTicker(max(w.idle/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
		}
		w.mu.Lock()
		w.expireLocked(w.now())
		if w.lru.Len() == 0 {
			w.sweeping = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

// expireLocked stops the namespaces unused since now-idle; they sit at the back of the list.
func (w *watchCache) expireLocked(now time.Time) {
	for el := w.lru.Back(); el != nil && now.Sub(el.Value.(*nsWatch).used) >= w.idle; el = w.lru.Back() {
		w.stopLocked(el)
	}
}

func (w *watchCache) stopLocked(el *list.Element) {
	nw := w.lru.Remove(el).(*nsWatch)
	delete(w.ns, nw.namespace)
	nw.cancel()
	// Shutdown waits for the informers' goroutines, which the cancel is ending; not under the lock.
	go func() {
		for _, f := range nw.factories {
			f.Shutdown()
		}
		close(nw.stopped)
	}()
}

func (w *watchCache) start(namespace string) *nsWatch {
	ctx, cancel := context.WithCancel(context.Background())
	nw := &nsWatch{namespace: namespace, failed: make(chan struct{}), cancel: cancel, stopped: make(chan struct{}),
		forgotten: newForgotten(w.now)}
	ef := extinformers.NewSharedInformerFactoryWithOptions(w.ext, 0, extinformers.WithNamespace(namespace),
		extinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = w.ownerKey }))
	sf := sandboxinformers.NewSharedInformerFactoryWithOptions(w.core, 0, sandboxinformers.WithNamespace(namespace),
		sandboxinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ourSandboxes }))
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
		nw.stores = append(nw.stores, inf.GetStore())
	}
	if w.notices != nil {
		_, _ = ci.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: w.claimDeleted})
	}
	ef.Start(ctx.Done())
	sf.Start(ctx.Done())
	nw.factories = []interface{ Shutdown() }{ef, sf}
	return nw
}

// watched returns the namespaces being watched, most recently used first.
func (w *watchCache) watched() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, w.lru.Len())
	for el := w.lru.Front(); el != nil; el = el.Next() {
		out = append(out, el.Value.(*nsWatch).namespace)
	}
	return out
}

// size counts the claims and Sandboxes held across the watched namespaces.
func (w *watchCache) size() (claims, sandboxes int) {
	w.mu.Lock()
	var stores [][]cache.Store
	for el := w.lru.Front(); el != nil; el = el.Next() {
		stores = append(stores, el.Value.(*nsWatch).stores)
	}
	w.mu.Unlock()
	// ListKeys copies keys, not objects; the stores have their own locks.
	for _, s := range stores {
		claims += len(s[0].ListKeys())
		sandboxes += len(s[1].ListKeys())
	}
	return claims, sandboxes
}

// close stops every watch.
func (w *watchCache) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		close(w.done)
	}
	w.closed = true
	for w.lru.Len() > 0 {
		w.stopLocked(w.lru.Back())
	}
}

// watchNamespace tells the cache this server has a claim in namespace: the claim was just
// created, or a live API read found it with the caller's owner label.
func (c *Client) watchNamespace(namespace string) {
	if c.cache != nil {
		c.cache.observe(namespace)
	}
}
