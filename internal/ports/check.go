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
		_, exposed, err := r.store.Exposed(cctx, c.namespace, c.claim)
		cancel()
		if err != nil && !errors.Is(err, kube.ErrNotFound) {
			continue
		}
		r.endUnexposed(c, exposed)
	}
}

func (r *Registry) endUnexposed(c claimRef, exposed map[int]kube.Exposure) {
	r.mu.Lock()
	var closing []*listener
	for k, l := range r.listeners {
		if _, ok := exposed[k.port]; k.namespace == c.namespace && k.claim == c.claim && !ok {
			closing = append(closing, l)
			delete(r.listeners, k)
		}
	}
	for o := range r.open {
		if e, ok := exposed[o.port]; o.namespace == c.namespace && o.claim == c.claim && (!ok || !e.Valid(o.tokenHash)) {
			o.cancel()
			delete(r.open, o)
		}
	}
	r.mu.Unlock()
	for _, l := range closing {
		_ = l.srv.Close()
	}
	if len(closing) > 0 {
		r.log.Info().Str("namespace", c.namespace).Str("claim", c.claim).Int("listeners", len(closing)).Msg("exposed ports ended")
	}
}
