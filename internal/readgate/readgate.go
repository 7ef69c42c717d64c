// Package readgate bounds what checking a URL this server handed out (expose_port's,
// create_transfer_url's) costs the API server. Such a URL names a claim and carries a token,
// and the claim's record (exposures, transfer grants) says whether the token is valid. The
// watch cache answers first; a token it does not know (made through another replica a moment
// ago, before the watch showed it?) is asked of the API, and that read is shared by the
// concurrent requests of the claim and answers its later ones for ReadFor. Once such a read
// has refused a token, or found no claim, the tokens it lacks are refused for ReadFor before
// any read. So a flood of wrong tokens or unknown claims costs one API read per claim per
// ReadFor instead of one or two per request. A URL made through another replica in that time,
// after the read, is refused until the read expires.
package readgate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

const (
	// ReadFor is how long an API read of a claim answers for it.
	ReadFor = time.Second
	// maxReads bounds the claims remembered so (least recently added go first).
	maxReads = 1024
	// readWithin bounds one read: it outlives the request that started it, since the
	// requests that share it wait for it too.
	readWithin = 10 * time.Second
)

// Ref names a claim.
type Ref struct{ Namespace, Name string }

// ReadFunc reads a claim's record: from the watch cache when it can, unless fresh, which asks
// the API. A claim that is not this server's is kube.ErrNotFound.
type ReadFunc[V any] func(ctx context.Context, ref Ref, fresh bool) (V, error)

// Gate checks tokens against claims' records of type V.
type Gate[V any] struct {
	read  ReadFunc[V]
	reads *utilcache.LRUExpireCache // Ref -> *apiRead[V], for ReadFor
	group singleflight.Group
}

// apiRead is what the last API read of a claim found: its record, or err, kube.ErrNotFound.
type apiRead[V any] struct {
	v   V
	err error
	// refused: a token was refused by this read, so it was not (only) the watch cache lagging
	// behind a new URL, and the tokens it lacks are refused before any read.
	refused atomic.Bool
}

// New makes a gate over read.
func New[V any](read ReadFunc[V]) *Gate[V] { return NewWithClock(read, clock.RealClock{}) }

// NewWithClock makes a gate whose API reads expire by c (tests step a fake clock).
func NewWithClock[V any](read ReadFunc[V], c clock.Clock) *Gate[V] {
	return &Gate[V]{read: read, reads: utilcache.NewLRUExpireCacheWithClock(maxReads, c)}
}

// Check returns the record of ref that decides a request, and the read's error (kube.ErrNotFound
// for a claim that is not this server's): valid says whether a record admits the request's
// token, and the caller asks it again of what Check returns. Check asks the API only when the
// watch cache's record does not admit the token and no API read of ref answers for it.
func (g *Gate[V]) Check(ctx context.Context, ref Ref, valid func(V) bool) (V, error) {
	if a := g.apiRead(ref); a != nil && (a.err != nil || a.refused.Load() && !valid(a.v)) {
		return a.v, a.err
	}
	v, err := g.readShared(ctx, ref, false)
	if err != nil || valid(v) {
		return v, err
	}
	v, err = g.readShared(ctx, ref, true)
	if a := g.apiRead(ref); err == nil && !valid(v) && a != nil {
		a.refused.Store(true)
	}
	return v, err
}

// Forget drops what an API read of ref found: a token was just added that it lacks.
func (g *Gate[V]) Forget(ref Ref) { g.reads.Remove(ref) }

func (g *Gate[V]) apiRead(ref Ref) *apiRead[V] {
	v, _ := g.reads.Get(ref)
	a, _ := v.(*apiRead[V])
	return a
}

type result[V any] struct{ v V }

// readShared reads ref, sharing one read among concurrent requests; an API read (or a "not
// found") is remembered for ReadFor and answers the fresh reads after it.
func (g *Gate[V]) readShared(ctx context.Context, ref Ref, fresh bool) (V, error) {
	ch := g.group.DoChan(fmt.Sprintf("%t/%s/%s", fresh, ref.Namespace, ref.Name), func() (any, error) {
		if a := g.apiRead(ref); a != nil && (fresh || a.err != nil) {
			return result[V]{a.v}, a.err
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readWithin)
		defer cancel()
		v, err := g.read(rctx, ref, fresh)
		if errors.Is(err, kube.ErrNotFound) || fresh && err == nil {
			g.reads.Add(ref, &apiRead[V]{v: v, err: err}, ReadFor)
		}
		return result[V]{v}, err
	})
	select {
	case res := <-ch:
		r, _ := res.Val.(result[V])
		return r.v, res.Err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

// Admit takes a place for a request under one of the server's per-principal caps, or refuses
// it with an error saying which cap and what to do; release gives the place back.
type Admit func(ctx context.Context) (release func(), err error)

// Take is a(ctx), or no bound when a is nil. Its release may be called more than once (early,
// then deferred): only the first call counts.
func (a Admit) Take(ctx context.Context) (func(), error) {
	if a == nil {
		return func() {}, nil
	}
	release, err := a(ctx)
	if err != nil {
		return nil, err
	}
	return sync.OnceFunc(release), nil
}

// Limits are the caps a request through a URL is held to, so that a flood of them weighs on
// its principal alone: Check while its token is checked (API reads, counted with the tool calls
// under K8S_SANDBOX_HTTP__MAX_CONCURRENT_CALLS) and Stream for its whole life (an open
// connection, counted with the MCP streams under K8S_SANDBOX_HTTP__MAX_STREAMS_PER_PRINCIPAL).
// Stream is taken first, so a refusal never spends a one-time URL.
type Limits struct{ Check, Stream Admit }

// Enter takes a request's Stream place, then its Check place. The caller releases both (each
// release runs once however often it is called): Check as soon as the token is checked.
func (l Limits) Enter(ctx context.Context) (stream, check func(), err error) {
	if stream, err = l.Stream.Take(ctx); err != nil {
		return nil, nil, err
	}
	if check, err = l.Check.Take(ctx); err != nil {
		stream()
		return nil, nil, err
	}
	return stream, check, nil
}
