// Package owner names who owns a sandbox. The name becomes a Kubernetes label value on every
// claim, so it is always a valid one.
package owner

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/mark3labs/mcp-go/server"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Anonymous owns the sandboxes of HTTP requests that carry no session (the 2026-07-28
// protocol has none) until authentication gives them a principal.
const Anonymous = "http-anonymous"

// Owners hands out owner ids and remembers which owner each anonymous HTTP session had, so
// the session's sandboxes can be released when it ends. A principal's owner is never
// remembered here: no session end releases it.
type Owners struct {
	stdio    string
	mu       sync.Mutex
	sessions map[string]string
}

// New mints this process's stdio owner id. mcp-go names every stdio session "stdio", which
// would make every laptop's server share (and see) each other's sandboxes.
// A fixed stdioID (K8S_SANDBOX_STDIO_OWNER) lets a user reattach to sandboxes across restarts.
func New(stdioID string) *Owners {
	if stdioID == "" {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		stdioID = "stdio-" + hex.EncodeToString(b)
	}
	return &Owners{stdio: stdioID, sessions: map[string]string{}}
}

// StdioID is the per-process owner id.
func (o *Owners) StdioID() string { return o.stdio }

// Stdio is the OwnerFunc for stdio: one owner per process.
func (o *Owners) Stdio(context.Context) (string, error) { return o.stdio, nil }

// HTTP is the OwnerFunc for streamable HTTP. An authenticated principal owns its sandboxes in
// both protocol eras, so they outlive the session that created them (their shutdown time ends
// them) and any session of the same principal, on any replica, finds them again. Without
// authentication the MCP session owns them (it is all that tells two anonymous clients apart)
// and is remembered so that its end releases them; without either (the 2026-07-28 protocol,
// anonymous), Anonymous.
func (o *Owners) HTTP(ctx context.Context) (string, error) {
	if _, ok := auth.PrincipalFrom(ctx); ok {
		return SessionOwner(ctx, ""), nil
	}
	if s := server.ClientSessionFromContext(ctx); s != nil && s.SessionID() != "" {
		id := SessionOwner(ctx, s.SessionID())
		o.mu.Lock()
		o.sessions[s.SessionID()] = id
		o.mu.Unlock()
		return id, nil
	}
	return Anonymous, nil
}

// SessionOwner is the owner HTTP gives the calls of session sessionID (with ctx's principal),
// without remembering it: for routing what concerns an owner to its sessions.
func SessionOwner(ctx context.Context, sessionID string) string {
	if p, ok := auth.PrincipalFrom(ctx); ok {
		return ForPrincipal(p)
	}
	if sessionID == "" {
		return Anonymous
	}
	return LabelValue(sessionID)
}

// HTTPPrincipal names the caller behind an HTTP owner, for per-caller caps: the authenticated
// principal (whatever session it uses), else Anonymous, so that opening more sessions never
// buys more sandboxes.
func (o *Owners) HTTPPrincipal(ctx context.Context) (string, error) {
	if p, ok := auth.PrincipalFrom(ctx); ok {
		return ForPrincipal(p), nil
	}
	return Anonymous, nil
}

// Forget ends a session and returns the owner it had, if it ever used one of its own (an
// anonymous session's; an authenticated one's sandboxes belong to its principal and stay).
func (o *Owners) Forget(sessionID string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	id, ok := o.sessions[sessionID]
	delete(o.sessions, sessionID)
	return id, ok
}

// ForPrincipal is the owner id of an authenticated principal: a hash of its source-qualified
// form (auth.Principal.String), so that the static principal "alice" and an OIDC token whose
// sub is "alice" never share an owner, and the id is a valid label value whatever the name
// holds. The "p-" prefix keeps it apart from session ids and from LabelValue's "h-" hashes.
func ForPrincipal(p auth.Principal) string {
	sum := sha256.Sum256([]byte(p.String()))
	return "p-" + hex.EncodeToString(sum[:])[:40]
}

// LabelValue returns id if it is a valid label value, else a stable hash of it that is.
func LabelValue(id string) string {
	if len(validation.IsValidLabelValue(id)) == 0 && id != "" {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "h-" + hex.EncodeToString(sum[:])[:40]
}
