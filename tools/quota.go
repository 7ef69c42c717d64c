package tools

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// quota holds the per-caller sandbox cap exactly under concurrent creates. A caller's creates
// pass one at a time from the count until their claim is posted, so every count, read from
// the API itself, already includes every earlier create of that caller. It counts by principal
// label across the namespaces the caller used here (all allowed namespaces under an
// allowlist), so more sessions do not mean more sandboxes.
type quota struct {
	mu      sync.Mutex
	callers map[string]*callerQuota
}

type callerQuota struct {
	turn       chan struct{} // holds one token: the right to count and post
	refs       int           // under quota.mu: creates between lookup and release
	namespaces []string      // under quota.mu
}

// maxCallers bounds the memory of callers with nothing in flight; one forgotten counts only
// in the namespace of its next create (and in every allowed one under an allowlist).
const maxCallers = 4096

func newQuota() *quota { return &quota{callers: map[string]*callerQuota{}} }

// admit names the caller behind owner and, under a cap, admits one create for it. release
// must be called as soon as the claim is posted, and again (harmlessly) when the create ends.
func (d Deps) admit(ctx context.Context, owner, ns string) (principal string, release func(), err error) {
	principal = owner
	if d.Principal != nil {
		if principal, err = d.Principal(ctx); err != nil {
			return "", nil, err
		}
	}
	if d.MaxSandboxesPerOwner <= 0 {
		return principal, func() {}, nil
	}
	release, live, err := d.quota.reserve(ctx, principal, ns, d.AllowedNamespaces, d.MaxSandboxesPerOwner, d.Claims.CountPrincipal)
	if err != nil {
		return "", nil, err
	}
	if release == nil {
		return principal, nil, &capError{badInput("you already have %d live sandboxes, the most this server allows; "+
			"delete one with delete_sandbox (list_sandboxes lists them) and retry", live)}
	}
	return principal, release, nil
}

// errAtCap matches the refusal of a create at the cap (capError), which a repeat of a live
// request_id passes.
var errAtCap = errors.New("at the sandbox cap")

// capError is the cap's refusal: the model reads the inputError, errors.Is finds errAtCap.
type capError struct{ error }

func (capError) Is(target error) bool { return target == errAtCap }
func (e capError) Unwrap() error      { return e.error }

// counter counts a caller's live claims in one namespace.
type counter func(ctx context.Context, namespace, principal string) (int, error)

// reserve waits for principal's turn, counts its live claims and, below max, keeps the turn
// until release; at or over max it returns a nil release and the count.
func (q *quota) reserve(ctx context.Context, principal, ns string, allowed []string, max int, count counter) (release func(), live int, err error) {
	c := q.lookup(principal)
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		q.done(c)
		return nil, 0, ctx.Err()
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			<-c.turn
			q.done(c)
		})
	}
	namespaces := allowed
	if len(namespaces) == 0 {
		namespaces = q.namespaces(c, ns)
	}
	for _, n := range namespaces {
		k, err := count(ctx, n, principal)
		if err != nil {
			release()
			return nil, 0, err
		}
		live += k
	}
	if live >= max {
		release()
		return nil, live, nil
	}
	return release, live, nil
}

func (q *quota) lookup(key string) *callerQuota {
	q.mu.Lock()
	defer q.mu.Unlock()
	c := q.callers[key]
	if c == nil {
		if len(q.callers) >= maxCallers {
			for k, other := range q.callers {
				if other.refs == 0 {
					delete(q.callers, k)
				}
			}
		}
		c = &callerQuota{turn: make(chan struct{}, 1)}
		q.callers[key] = c
	}
	c.refs++
	return c
}

// namespaces returns where to count, remembering ns for the caller's later creates.
func (q *quota) namespaces(c *callerQuota, ns string) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !slices.Contains(c.namespaces, ns) {
		c.namespaces = append(c.namespaces, ns)
	}
	return slices.Clone(c.namespaces)
}

func (q *quota) done(c *callerQuota) {
	q.mu.Lock()
	c.refs--
	q.mu.Unlock()
}
