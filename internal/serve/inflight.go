package serve

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// inFlightWait is how long a request waits for room under the in-flight byte bounds before it
// is refused: long enough to ride out a burst of large calls, short enough that the client
// hears back well within its own timeout.
const inFlightWait = 2 * time.Second

// inFlight bounds the bytes of request bodies held in memory, per principal and in total. A
// body stays in memory for its whole request and is decoded into several copies on the way to
// a tool, so the number of calls (MaxConcurrentCalls) alone does not bound the memory: the
// bytes are taken before the body is read and given back when the request has been answered.
type inFlight struct {
	total             *semaphore.Weighted
	max, maxPrincipal int64

	mu  sync.Mutex
	per map[string]*principalBytes
	// held and peak count what the semaphores hold, so tests can check the bound was kept.
	held, peak, peakPrincipal int64
}

type principalBytes struct {
	sem        *semaphore.Weighted
	refs       int
	held, peak int64
}

func newInFlight(set HTTPSettings) *inFlight {
	return &inFlight{total: semaphore.NewWeighted(set.MaxBodyBytesInFlight), max: set.MaxBodyBytesInFlight,
		maxPrincipal: set.MaxBodyBytesInFlightPerPrincipal, per: map[string]*principalBytes{}}
}

// collectAfter is the size of a request's body and result from which its end collects the
// garbage at once. Such a request leaves several times its bytes behind (decoded copies, the
// JSON encoder's doubling buffers), and the collector lets the heap grow to twice what was
// live before it runs (GOGC=100): large calls in a row would stack their garbage up to
// GOMEMLIMIT. Collected before its bytes are given back, the next large call reuses that
// memory instead. A collection costs in proportion to what is live, a few ms at this scale.
const collectAfter = 4 << 20

func collectAfterLarge(l *lease) {
	if l.held >= collectAfter {
		runtime.GC()
	}
}

// lease is one request's share of the bounds; release gives it all back.
type lease struct {
	f         *inFlight
	principal string
	p         *principalBytes
	held      int64
}

func (f *inFlight) lease(principal string) *lease {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.per[principal]
	if p == nil {
		p = &principalBytes{sem: semaphore.NewWeighted(f.maxPrincipal)}
		f.per[principal] = p
	}
	p.refs++
	return &lease{f: f, principal: principal, p: p}
}

// grow takes n more bytes, waiting up to inFlightWait for them. The principal's share comes
// first, so one principal's backlog waits on itself and never holds the total's room.
func (l *lease) grow(ctx context.Context, n int64) *refusal {
	ctx, cancel := context.WithTimeout(ctx, inFlightWait)
	defer cancel()
	if err := l.p.sem.Acquire(ctx, n); err != nil {
		return l.f.refusePerPrincipal()
	}
	if err := l.f.total.Acquire(ctx, n); err != nil {
		l.p.sem.Release(n)
		return l.f.refuseTotal()
	}
	l.took(n)
	return nil
}

// took records n bytes acquired from both semaphores.
func (l *lease) took(n int64) {
	l.held += n
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held += n
	l.p.held += n
	f.peak = max(f.peak, f.held)
	f.peakPrincipal = max(f.peakPrincipal, l.p.held)
}

// resultPoll is how often a result waiting for room tries again.
const resultPoll = 20 * time.Millisecond

// tryGrow is grow for a result: it takes the bytes only when they are free and no request
// waits for them, trying again every resultPoll for up to inFlightWait. A large result waiting
// in line (the semaphores are FIFO) would hold back every small request behind it, the
// principal's own next calls included; polling lets those pass first.
func (l *lease) tryGrow(ctx context.Context, n int64) *refusal {
	ctx, cancel := context.WithTimeout(ctx, inFlightWait)
	defer cancel()
	for {
		principal := l.p.sem.TryAcquire(n)
		if principal && l.f.total.TryAcquire(n) {
			l.took(n)
			return nil
		}
		if principal {
			l.p.sem.Release(n)
		}
		select {
		case <-ctx.Done():
			if !principal {
				return l.f.refusePerPrincipal()
			}
			return l.f.refuseTotal()
		case <-time.After(resultPoll):
		}
	}
}

func (l *lease) release() {
	f := l.f
	if l.held > 0 {
		f.total.Release(l.held)
		l.p.sem.Release(l.held)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held -= l.held
	l.p.held -= l.held
	l.held = 0
	if l.p.refs--; l.p.refs == 0 {
		delete(f.per, l.principal)
	}
}

// peaks are the most bytes held at once in total and by one principal.
func (f *inFlight) peaks() (total, principal int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peak, f.peakPrincipal
}

// The refusals ask for a retry in a second: the bytes come back as soon as the requests
// holding them have been answered, which for the large bodies that fill the bounds is seconds.
func (f *inFlight) refusePerPrincipal() *refusal {
	return &refusal{status: http.StatusTooManyRequests, retryAfter: 1, message: fmt.Sprintf(
		"too many request bytes in flight for this principal: the limit is %d bytes (%s). Wait for your other "+
			"requests to be answered, or send large content in fewer calls at once, then retry.",
		f.maxPrincipal, VarMaxBodyBytesInFlightPerPrincipal)}
}

func (f *inFlight) refuseTotal() *refusal {
	return &refusal{status: http.StatusServiceUnavailable, retryAfter: 1, message: fmt.Sprintf(
		"the server holds the most request bytes in flight it allows: the limit is %d bytes (%s). Retry in a moment.",
		f.max, VarMaxBodyBytesInFlight)}
}

// resultBudget lets a tool take its result's bytes from its request's lease (budget.Budget).
type resultBudget struct{ l *lease }

func (b resultBudget) Reserve(ctx context.Context, n int64) error {
	f := b.l.f
	if b.l.held+n > f.maxPrincipal {
		// More than one principal may ever hold: waiting would not help.
		return fmt.Errorf("it needs %d bytes of server memory and, with its request's, more than the %d one principal may hold (%s)",
			n, f.maxPrincipal, VarMaxBodyBytesInFlightPerPrincipal)
	}
	if no := b.l.tryGrow(ctx, n); no != nil {
		if no.status == http.StatusTooManyRequests {
			return fmt.Errorf("your calls already hold the %d bytes of server memory one principal may (%s)", f.maxPrincipal, VarMaxBodyBytesInFlightPerPrincipal)
		}
		return fmt.Errorf("the server already holds the %d bytes of requests and results in flight it allows (%s)", f.max, VarMaxBodyBytesInFlight)
	}
	return nil
}
