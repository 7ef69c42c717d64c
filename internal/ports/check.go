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
// (the API is down) keeps them.
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
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, exposed, err := r.store.Exposed(cctx, c.namespace, c.claim, false)
		cancel()
		if err != nil && !errors.Is(err, kube.ErrNotFound) {
			continue
		}
		r.endUnexposed(c, exposed)
	}
}

// endUnexposed ends what this process holds for claim c that exposed (its record) no longer has.
func (r *Registry) endUnexposed(c claimRef, exposed map[int]kube.Exposure) {
	mine := func(k key) bool { return k.namespace == c.namespace && k.claim == c.claim }
	r.endWhere(func(k key) bool { _, ok := exposed[k.port]; return mine(k) && !ok },
		func(o *openRequest) bool {
			e, ok := exposed[o.port]
			return mine(o.key) && (!ok || !e.Valid(o.tokenHash))
		})
}
