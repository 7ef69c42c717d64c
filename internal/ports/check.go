package ports

import (
	"context"
	"errors"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// Run checks, until ctx ends, that what this process holds (open requests, stdio listeners)
// still has its exposure, then closes everything.
func (r *Registry) Run(ctx context.Context) {
	t := time.NewTicker(checkEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.end(func(key) bool { return true })
			return
		case <-t.C:
			r.check(ctx)
		}
	}
}

type claimRef struct{ namespace, claim string }

// check ends the requests and listeners whose exposure ended, possibly through another
// replica: unexposed, its token dropped, or its claim gone. A claim that cannot be read now
// (the API is down) keeps them. The watch cache answers first; what it says has ended is
// confirmed by a read from the API before anything ends, because the cache can lag behind an
// exposure made a moment ago (by this process or another) by longer than the time this process
// reads its own writes from the API (seen in CI under load: a URL just exposed had its
// listener closed).
func (r *Registry) check(ctx context.Context) {
	r.mu.Lock()
	held := map[claimRef]bool{}
	for k := range r.listeners {
		held[claimRef{k.namespace, k.claim}] = true
	}
	for o := range r.open {
		held[claimRef{o.namespace, o.claim}] = true
	}
	r.mu.Unlock()
	for c := range held {
		cctx, cancel := context.WithTimeout(ctx, confirmWithin)
		_, exposed, err := r.store.Exposed(cctx, c.namespace, c.claim, false)
		if err == nil && !r.wouldEnd(c, exposed) {
			cancel()
			continue
		}
		_, exposed, err = r.store.Exposed(cctx, c.namespace, c.claim, true)
		cancel()
		if err != nil && !errors.Is(err, kube.ErrNotFound) {
			continue
		}
		r.endUnexposed(c, exposed)
	}
}

// wouldEnd says whether endUnexposed(c, exposed) would end anything.
func (r *Registry) wouldEnd(c claimRef, exposed map[int]kube.Exposure) bool {
	portGone, requestGone := unexposed(c, exposed)
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.listeners {
		if portGone(k) {
			return true
		}
	}
	for o := range r.open {
		if requestGone(o) {
			return true
		}
	}
	return false
}

// endUnexposed ends what this process holds for claim c that exposed (its record) no longer has.
func (r *Registry) endUnexposed(c claimRef, exposed map[int]kube.Exposure) {
	r.endWhere(unexposed(c, exposed))
}

// unexposed are the listeners and requests of claim c that exposed no longer has.
func unexposed(c claimRef, exposed map[int]kube.Exposure) (func(key) bool, func(*openRequest) bool) {
	mine := func(k key) bool { return k.namespace == c.namespace && k.claim == c.claim }
	return func(k key) bool { _, ok := exposed[k.port]; return mine(k) && !ok },
		func(o *openRequest) bool {
			e, ok := exposed[o.port]
			return mine(o.key) && (!ok || !e.Valid(o.tokenHash))
		}
}
