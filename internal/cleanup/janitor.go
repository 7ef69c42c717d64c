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

// Claims lists and deletes an owner's claims (kube.Client implements it).
type Claims interface {
	List(ctx context.Context, namespace, owner string) ([]kube.Claim, error)
	Delete(ctx context.Context, namespace, name, owner string) error
}

// Janitor remembers where each owner created sandboxes and deletes them on release. It asks
// only namespaces it saw, so it needs no cluster-wide list permission.
type Janitor struct {
	claims  Claims
	log     zerolog.Logger
	timeout time.Duration

	mu         sync.Mutex
	namespaces map[string]map[string]bool // owner -> namespaces
	wg         sync.WaitGroup
}

// New returns a Janitor; each release gets timeout to finish.
func New(claims Claims, log zerolog.Logger, timeout time.Duration) *Janitor {
	return &Janitor{claims: claims, log: log, timeout: timeout, namespaces: map[string]map[string]bool{}}
}

// Created records that owner has (or may have) sandboxes in namespace.
func (j *Janitor) Created(owner, namespace string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.namespaces[owner] == nil {
		j.namespaces[owner] = map[string]bool{}
	}
	j.namespaces[owner][namespace] = true
}

// Namespaces lists where owner created sandboxes, sorted.
func (j *Janitor) Namespaces(owner string) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []string
	for ns := range j.namespaces[owner] {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// Release deletes every sandbox owner has in the namespaces it used and forgets the owner.
func (j *Janitor) Release(ctx context.Context, owner, why string) (int, error) {
	namespaces := j.Namespaces(owner)
	j.mu.Lock()
	delete(j.namespaces, owner)
	j.mu.Unlock()
	if len(namespaces) == 0 {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), j.timeout)
	defer cancel()
	deleted := 0
	var errs []error
	for _, ns := range namespaces {
		claims, err := j.claims.List(ctx, ns, owner)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing claims in %s: %w", ns, err))
			continue
		}
		for _, c := range claims {
			if err := j.claims.Delete(ctx, ns, c.Name, owner); err != nil && !errors.Is(err, kube.ErrNotFound) {
				errs = append(errs, fmt.Errorf("deleting %s/%s: %w", ns, c.Name, err))
				continue
			}
			deleted++
		}
	}
	err := errors.Join(errs...)
	ev := j.log.Info()
	if err != nil {
		ev = j.log.Warn().Err(err)
	}
	ev.Str("owner", owner).Str("reason", why).Int("deleted", deleted).Msg("released sandboxes of an ended session")
	return deleted, err
}

// ReleaseAsync runs Release in the background (hooks must not block the session sweeper);
// Wait waits for every background release.
func (j *Janitor) ReleaseAsync(owner, why string) {
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		_, _ = j.Release(context.Background(), owner, why)
	}()
}

// Wait blocks until background releases finish or ctx ends.
func (j *Janitor) Wait(ctx context.Context) {
	done := make(chan struct{})
	go func() { j.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
