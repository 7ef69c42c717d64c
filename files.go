package main

import (
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/hostfs"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/transfer"
)

// fileRoutes sets up the two ways files move without passing through the model: copies
// between allowed host directories and sandboxes (any transport, when the operator listed
// some in K8S_SANDBOX_HOST_PATHS) and one-time transfer URLs on this server's own HTTP front
// (over HTTP only: over stdio there is no front to name).
func (a *app) fileRoutes() {
	a.deps.MaxTransferBytes = a.cfg.MaxTransferBytes
	a.deps.HostFS = hostfs.New(a.cfg.HostPaths)
	if a.f.httpAddr != "" {
		var opts []transfer.Option
		if !a.deps.Selection.AllowsOverwrite() {
			opts = append(opts, transfer.WithoutUploads()) // the operator's filter holds on the URLs too
		}
		a.transfers = transfer.New(a.claims, a.conn, principalOf, a.cfg.MaxTransferBytes, a.log, opts...)
		a.deps.Transfers = a.transfers
	}
}
