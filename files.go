package main

import (
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/hostfs"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/transfer"
)

// fileRoutes sets up the two ways files move without passing through the model: copies
// between allowed host directories and sandboxes (over stdio, when the operator listed some in
// K8S_SANDBOX_HOST_PATHS) and one-time transfer URLs on this server's own HTTP front (over
// HTTP only: over stdio there is no front to name). Over HTTP the host directories would be
// every caller's at once (one principal read and overwrote another's copied-out file), so the
// copy tools are not listed there, and a start-up warning says the setting is ignored.
func (a *app) fileRoutes() {
	a.deps.MaxTransferBytes = a.cfg.MaxTransferBytes
	if a.f.httpAddr == "" {
		a.deps.HostFS = hostfs.New(a.cfg.HostPaths)
		return
	}
	if len(a.cfg.HostPaths) > 0 {
		a.log.Warn().Str("setting", hostfs.Setting).Msg("ignored over HTTP: every caller would share the host directories, " +
			"so copy_to_sandbox and copy_from_sandbox are not listed; callers move files of any size with create_transfer_url")
	}
	var opts []transfer.Option
	if !a.deps.Selection.AllowsOverwrite() {
		opts = append(opts, transfer.WithoutUploads()) // the operator's filter holds on the URLs too
	}
	a.transfers = transfer.New(a.claims, a.conn, principalOf, a.cfg.MaxTransferBytes, a.log, opts...)
	a.deps.Transfers = a.transfers
}
