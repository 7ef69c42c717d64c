package main

import (
	"context"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// stdioEnd decides, before serving, what the end of stdio (EOF or a signal) releases, and
// returns the function that does it.
//
// A random owner is this process's alone: its end releases every sandbox it has. A fixed owner
// (K8S_SANDBOX_STDIO_OWNER) may be served by other live processes at the same time (two
// sessions of one configuration, a restart overlapping the old process), each free to list
// and use every sandbox of the owner: so each process holds a Lease while it runs
// (kube.Hold), and its end releases the owner's sandboxes only when no other process holds
// one. The last one out releases them, with whatever a process that died left behind.
func (a *app) stdioEnd(ctx context.Context) func() {
	id := a.owners.StdioID()
	switch {
	case a.cfg.KeepOnSessionEnd:
		return func() {}
	case a.cfg.StdioOwner == "":
		return func() { _, _ = a.janitor.Release(ctx, id, "stdio closed") }
	}
	// A fixed owner may have sandboxes from an earlier process, which this one can list and
	// use: its end releases them too, wherever this server may create (never beyond: another
	// configuration of the owner may serve other namespaces).
	mine := append([]string{a.deps.DefaultNamespace}, a.cfg.AllowedNamespaces...)
	a.janitor.Include(id, mine...)
	hold, err := a.claims.Hold(ctx, a.deps.DefaultNamespace, id)
	if err != nil {
		a.log.Warn().Err(err).Str("owner", id).Msg("K8S_SANDBOX_STDIO_OWNER is set, but this process cannot tell other processes of that owner " +
			"that it is alive: at its end it leaves the owner's sandboxes to their shutdown time, rather than delete one another process " +
			"may be using (grant create, patch, list and delete on coordination.k8s.io leases, as deploy/rbac.yaml does)")
		return func() {}
	}
	return func() {
		// Its own Lease goes first: two processes ending together then never both wait for
		// the other (each would leave the sandboxes to a process that is gone).
		hold.Release(ctx)
		others, err := hold.OthersAlive(context.WithoutCancel(ctx), mine...)
		switch {
		case err != nil:
			a.log.Warn().Err(err).Str("owner", id).Msg("could not tell whether another process of this owner is alive: " +
				"its sandboxes are left to their shutdown time")
		case others > 0:
			a.log.Info().Str("owner", id).Int("live_processes", others).Dur("hold", kube.HoldDuration).
				Msg("another live process of this owner may be using its sandboxes: they are left to it (the last process to end releases them)")
		default:
			_, _ = a.janitor.Release(ctx, id, "stdio closed")
		}
	}
}
