// Package transfer serves create_transfer_url: a one-time, short-lived URL on this server's
// own HTTP front (/transfer/<namespace>/<claim>/<token>, behind the same authentication as
// /mcp) through which a client streams one file into a sandbox (PUT: curl -T file URL) or out
// of it (GET: curl -o file URL), in bounded server memory whatever the size, at most the
// operator's cap (K8S_SANDBOX_MAX_TRANSFER_BYTES).
//
// The grant lives on the claim (kube.TransferGrant: who asked, the file, the direction, the
// expiry and the SHA-256 of the token), not in this process, so any replica serves the URL and
// it ends with the claim. Using it removes the grant with a write conditional on the claim's
// resourceVersion (kube.Client.ConsumeTransfer): it works once across replicas. A request of
// another principal, or with the other direction's method, is refused before the grant is
// removed, so it does not spend the URL.
//
// Streams end where the Streamer ends them: deleting the sandbox makes the next URL use fail
// (its grant is gone with the claim), and a transfer under way fails when the sandbox stops
// answering. A PUT whose body runs past the cap is cut there and answered 413; whether the
// sandbox keeps what arrived is the Streamer's: an Upload that writes to a temporary name and
// renames on success leaves nothing, one that writes in place leaves the part that arrived.
// A Content-Length over the cap is refused before anything is read or spent.
package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/conn"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/readgate"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/token"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/kube"
)

// PathPrefix is where transfer URLs live on the HTTP server.
const PathPrefix = "/transfer/"

// The directions of a transfer, as create_transfer_url names them.
const (
	Upload   = "upload"   // PUT: the request body becomes the sandbox's file
	Download = "download" // GET: the sandbox's file is the response body
)

// Bounds of transfer URLs; create_transfer_url's schema, config and README take theirs from here.
const (
	// DefaultExpires is a URL's lifetime when expires_seconds is left out: long enough to
	// start one command, short enough that a leaked URL is soon worthless.
	DefaultExpires = 300 * time.Second
	// MaxExpires bounds expires_seconds.
	MaxExpires = 3600 * time.Second
	// DefaultMaxBytes is K8S_SANDBOX_MAX_TRANSFER_BYTES' default (4 GiB): memory does not
	// grow with it, only the sandbox's disk and the time a transfer holds a connection.
	DefaultMaxBytes = 4 << 30
	// tokenBytes of randomness in each URL (256 bits).
	tokenBytes = 32
	// consumeWithin bounds the API reads and write that check and spend a grant.
	consumeWithin = 10 * time.Second
)

// ErrNoHTTP is create_transfer_url over stdio: there is no HTTP front to hand out.
var ErrNoHTTP = errors.New("transfer URLs are served by this server's streamable HTTP front, and it is not serving HTTP (stdio); use upload_file or download_file")

// ErrNoUploads refuses an upload on a server made WithoutUploads.
var ErrNoUploads = errors.New("this server hands out no upload URLs: its operator left out the tools that can replace files " +
	"(--disable-destructive or --read-only), and an upload replaces the file at its path")

// Store records the grants on the claims (kube.Client implements it).
type Store interface {
	GrantTransfer(ctx context.Context, namespace, name, owner string, g kube.TransferGrant) error
	ConsumeTransfer(ctx context.Context, namespace, name, tokenHash string, accept func(kube.TransferGrant) error) (kube.Claim, kube.TransferGrant, error)
	// Transfers reads a claim's live grants, from the watch cache unless fresh.
	Transfers(ctx context.Context, namespace, name string, fresh bool) ([]kube.TransferGrant, error)
}

// Streamer moves one file's bytes to or from a sandbox without holding them (the streaming
// conn.Conn). Upload reads r to its end or its first error; Download fails with
// conn.ErrTooLarge past maxBytes, ideally before writing anything. Exec runs the check that a
// download is a regular file (regular.go).
type Streamer interface {
	Upload(ctx context.Context, t conn.Target, path string, r io.Reader) (int64, error)
	Download(ctx context.Context, t conn.Target, path string, w io.Writer, maxBytes int64) (int64, error)
	Exec(ctx context.Context, t conn.Target, req conn.ExecRequest) (conn.ExecResult, error)
}

// Registry hands out transfer URLs and serves them.
type Registry struct {
	store     Store
	streamer  Streamer
	principal func(context.Context) string
	maxBytes  int64
	log       zerolog.Logger
	now       func() time.Time
	noUploads bool // WithoutUploads
	// gate refuses a token its claim's grants lack before ConsumeTransfer reads the API: a
	// flood of wrong tokens or unknown claims costs one API read per claim per
	// readgate.ReadFor, as /ports does.
	gate *readgate.Gate[[]kube.TransferGrant]

	mu     sync.Mutex
	base   string          // the server's URL; "": not serving HTTP, so no URLs
	limits readgate.Limits // the caller's caps (SetLimits)
}

// Option changes what New makes.
type Option func(*Registry)

// WithoutUploads refuses upload URLs, at creation (ErrNoUploads) and when used: an upload
// granted by a process without the operator's filter (another replica's settings, before a
// restart) is answered 403 and stays unspent. An upload replaces the file at its path, and the
// filter (--disable-destructive, --read-only) leaves out every tool that can do that.
func WithoutUploads() Option { return func(r *Registry) { r.noUploads = true } }

// New makes a registry; it hands out URLs once SetBase is called. principal names a request's
// or call's authenticated caller ("" when none; nil: every caller is ""); maxBytes caps each
// transfer (K8S_SANDBOX_MAX_TRANSFER_BYTES).
func New(store Store, streamer Streamer, principal func(context.Context) string, maxBytes int64, log zerolog.Logger, opts ...Option) *Registry {
	if principal == nil {
		principal = func(context.Context) string { return "" }
	}
	r := &Registry{store: store, streamer: streamer, principal: principal, maxBytes: maxBytes, log: log, now: time.Now}
	for _, o := range opts {
		o(r)
	}
	r.gate = readgate.New(func(ctx context.Context, ref readgate.Ref, fresh bool) ([]kube.TransferGrant, error) {
		return store.Transfers(ctx, ref.Namespace, ref.Name, fresh)
	})
	return r
}

// SetBase makes later URLs paths under base (the HTTP server's URL, no trailing slash).
func (r *Registry) SetBase(base string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.base = strings.TrimSuffix(base, "/")
}

// SetLimits holds later requests through transfer URLs to the caller's caps.
func (r *Registry) SetLimits(l readgate.Limits) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.limits = l
}

// Create grants the caller (the principal in ctx) one transfer of path on the owner's claim
// and returns its URL and when it expires. expires 0 means DefaultExpires.
func (r *Registry) Create(ctx context.Context, owner, namespace, claim, path, direction string, expires time.Duration) (string, time.Time, error) {
	r.mu.Lock()
	base := r.base
	r.mu.Unlock()
	switch {
	case base == "":
		return "", time.Time{}, ErrNoHTTP
	case direction != Upload && direction != Download:
		return "", time.Time{}, fmt.Errorf("direction must be %q or %q, got %q", Upload, Download, direction)
	case direction == Upload && r.noUploads:
		return "", time.Time{}, ErrNoUploads
	case path == "":
		return "", time.Time{}, errors.New("path is required: the file in the sandbox")
	case expires < 0 || expires > MaxExpires:
		return "", time.Time{}, fmt.Errorf("expires_seconds must be from 1 to %d, got %d", int(MaxExpires/time.Second), int(expires/time.Second))
	case expires == 0:
		expires = DefaultExpires
	}
	tok, err := token.New(tokenBytes)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("transfer: %w", err)
	}
	at := r.now().Add(expires).UTC().Truncate(time.Second)
	g := kube.TransferGrant{TokenHash: token.Hash(tok), Principal: r.principal(ctx), Path: path, Direction: direction, ExpiresAt: at}
	if err := r.store.GrantTransfer(ctx, namespace, claim, owner, g); err != nil {
		return "", time.Time{}, err
	}
	r.gate.Forget(readgate.Ref{Namespace: namespace, Name: claim}) // what it read lacks this grant
	return base + PathPrefix + url.PathEscape(namespace) + "/" + url.PathEscape(claim) + "/" + tok, at, nil
}

func target(c kube.Claim) conn.Target {
	return conn.Target{Namespace: c.Namespace, SandboxName: c.SandboxName, PodIPs: c.PodIPs, ServiceFQDN: c.ServiceFQDN}
}
