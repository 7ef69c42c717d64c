// Package cleanup deletes an owner's sandboxes when its MCP session ends (HTTP DELETE, the
// idle sweep, stdio EOF, server shutdown), so a forgotten sandbox does not run until its TTL.
// The claim's shutdownTime stays the backstop for whatever this misses (a crash, a client of
// the sessionless protocol).
package cleanup

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// ErrEnded is returned to a create whose owner's session has ended.
var ErrEnded = errors.New("the MCP session that would own this sandbox has ended; start a new session and retry")

// endedRetention is how long an ended owner stays marked. Its session is gone by then, and no
// call can still be on its way to Begin.
const endedRetention = time.Hour

// Claims lists and deletes an owner's claims (kube.Client implements it).
type Claims interface {
	List(ctx context.Context, namespace, owner string) ([]kube.Claim, error)
	Delete(ctx context.Context, namespace, name, owner string) error
}

// Janitor remembers where each owner created sandboxes (and the namespaces Include adds) and
// deletes them on release. It asks only those namespaces, so it needs no cluster-wide list
// permission.
//
// Release is exact against creates running at the same time: it marks the owner ended (a later
// Begin fails), waits for the creates already begun, and a create that still finishes after
// that deletes its own claim.
type Janitor struct {
	claims  Claims
	log     zerolog.Logger
	timeout time.Duration
	now     func() time.Time

	mu     sync.Mutex
	owners map[string]*ownerState
	ended  []endedMark // in the order owners ended, for pruning
}

type ownerState struct {
	namespaces map[string]bool
	creating   int
	idle       chan struct{} // closed when creating drops back to 0; nil while none run
	ended      bool
}

type endedMark struct {
	owner string
	at    time.Time
}

// New returns a Janitor; each release gets timeout to finish.
func New(claims Claims, log zerolog.Logger, timeout time.Duration) *Janitor {
	return &Janitor{claims: claims, log: log, timeout: timeout, now: time.Now, owners: map[string]*ownerState{}}
}

func (j *Janitor) state(owner string) *ownerState {
	st := j.owners[owner]
	if st == nil {
		st = &ownerState{namespaces: map[string]bool{}}
		j.owners[owner] = st
	}
	return st
}

// Begin records that owner is about to create a sandbox in namespace, before the claim exists,
// so a release running meanwhile waits for it. It fails with ErrEnded once owner was released.
// done must be called once with the created claim's name ("" when none was created); if owner
// was released meanwhile, done deletes that claim and returns ErrEnded.
func (j *Janitor) Begin(owner, namespace string) (done func(claim string) error, err error) {
	j.mu.Lock()
	st := j.state(owner)
	if st.ended {
		j.mu.Unlock()
		return nil, ErrEnded
	}
	st.namespaces[namespace] = true
	st.creating++
	if st.idle == nil {
		st.idle = make(chan struct{})
	}
	j.mu.Unlock()
	var once sync.Once
	return func(claim string) error {
		var ended bool
		once.Do(func() {
			j.mu.Lock()
			if st.creating--; st.creating == 0 {
				close(st.idle)
				st.idle = nil
			}
			ended = st.ended
			j.mu.Unlock()
		})
		if !ended || claim == "" {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), j.timeout)
		defer cancel()
		if err := j.claims.Delete(ctx, namespace, claim, owner); err != nil && !errors.Is(err, kube.ErrNotFound) {
			j.log.Warn().Err(err).Str("owner", owner).Str("claim", claim).Msg("could not delete a sandbox created after its session ended")
			return fmt.Errorf("%w (deleting sandbox %q also failed: %v)", ErrEnded, claim, err)
		}
		j.log.Info().Str("owner", owner).Str("claim", claim).Msg("deleted a sandbox created after its session ended")
		return fmt.Errorf("%w (its sandbox %q was deleted)", ErrEnded, claim)
	}, nil
}

// Include adds namespaces to those owner's release deletes in, beyond the ones it created in
// here: a process that took over a fixed stdio owner (K8S_SANDBOX_STDIO_OWNER) owns the
// sandboxes an earlier process of that owner left, and releases them like its own.
func (j *Janitor) Include(owner string, namespaces ...string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	st := j.state(owner)
	for _, ns := range namespaces {
		if ns != "" {
			st.namespaces[ns] = true
		}
	}
}

func sortedKeys(st *ownerState) []string {
	if st == nil {
		return nil
	}
	out := make([]string, 0, len(st.namespaces))
	for ns := range st.namespaces {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// Release marks owner ended, waits (within the timeout) for its creates in flight, then
// deletes every sandbox it has in the namespaces it used.
func (j *Janitor) Release(ctx context.Context, owner, why string) (int, error) {
	j.mu.Lock()
	st := j.state(owner)
	namespaces := sortedKeys(st)
	idle := st.idle
	if !st.ended {
		st.ended = true
		j.ended = append(j.ended, endedMark{owner: owner, at: j.now()})
	}
	st.namespaces = map[string]bool{}
	j.pruneLocked()
	j.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	if idle != nil {
		wctx, cancel := context.WithTimeout(ctx, j.timeout)
		select {
		case <-idle:
		case <-wctx.Done():
			j.log.Warn().Str("owner", owner).Msg("creates still running after the release timeout; each deletes its own sandbox when it finishes")
		}
		cancel()
	}
	if len(namespaces) == 0 {
		return 0, nil
	}
	// Its own budget: a create that used up the wait must not leave the rest undeleted.
	dctx, cancel := context.WithTimeout(ctx, j.timeout)
	defer cancel()
	deleted, err := j.deleteAll(dctx, owner, namespaces)
	ev := j.log.Info()
	if err != nil {
		ev = j.log.Warn().Err(err)
	}
	ev.Str("owner", owner).Str("reason", why).Int("deleted", deleted).Msg("released sandboxes of an ended session")
	return deleted, err
}

func (j *Janitor) deleteAll(ctx context.Context, owner string, namespaces []string) (int, error) {
	var all []kube.Claim
	var errs []error
	for _, ns := range namespaces {
		claims, err := j.claims.List(ctx, ns, owner)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing claims in %s: %w", ns, err))
			continue
		}
		all = append(all, claims...)
	}
	deleted, err := j.deleteClaims(ctx, owner, all)
	return deleted, errors.Join(append(errs, err)...)
}

func (j *Janitor) deleteClaims(ctx context.Context, owner string, claims []kube.Claim) (int, error) {
	deleted := 0
	var errs []error
	for _, c := range claims {
		if err := j.claims.Delete(ctx, c.Namespace, c.Name, owner); err != nil && !errors.Is(err, kube.ErrNotFound) {
			errs = append(errs, fmt.Errorf("deleting %s/%s: %w", c.Namespace, c.Name, err))
			continue
		}
		deleted++
	}
	return deleted, errors.Join(errs...)
}

// pruneLocked forgets owners that ended more than endedRetention ago and run nothing.
func (j *Janitor) pruneLocked() {
	cutoff := j.now().Add(-endedRetention)
	i := 0
	for ; i < len(j.ended) && j.ended[i].at.Before(cutoff); i++ {
		if st := j.owners[j.ended[i].owner]; st != nil && st.creating == 0 {
			delete(j.owners, j.ended[i].owner)
		}
	}
	j.ended = j.ended[i:]
}
