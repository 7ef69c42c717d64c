// Package owner names who owns a sandbox. The name becomes a Kubernetes label value on every
// claim, so it is always a valid one.
package owner

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"

	"github.com/mark3labs/mcp-go/server"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Anonymous owns the sandboxes of HTTP requests that carry no session (the 2026-07-28
// protocol has none) until authentication gives them a principal.
const Anonymous = "http-anonymous"

// Owners hands out owner ids.
type Owners struct {
	stdio string
}

// New mints this process's stdio owner id. mcp-go names every stdio session "stdio", which
// would make every laptop's server share (and see) each other's sandboxes.
func New() *Owners {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &Owners{stdio: "stdio-" + hex.EncodeToString(b)}
}

// StdioID is the per-process owner id.
func (o *Owners) StdioID() string { return o.stdio }

// Stdio is the OwnerFunc for stdio: one owner per process.
func (o *Owners) Stdio(context.Context) (string, error) { return o.stdio, nil }

// HTTP is the OwnerFunc for streamable HTTP: the MCP session, or Anonymous without one.
func (o *Owners) HTTP(ctx context.Context) (string, error) {
	if s := server.ClientSessionFromContext(ctx); s != nil && s.SessionID() != "" {
		return LabelValue(s.SessionID()), nil
	}
	return Anonymous, nil
}

// LabelValue returns id if it is a valid label value, else a stable hash of it that is.
func LabelValue(id string) string {
	if len(validation.IsValidLabelValue(id)) == 0 && id != "" {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "h-" + hex.EncodeToString(sum[:])[:40]
}
