package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"
)

var (
	// ErrInvalidToken: the token is not one of ours (unknown, expired, wrong audience, ...).
	ErrInvalidToken = errors.New("invalid token")
	// ErrUnavailable: the token could not be checked because the issuer's keys are unreachable.
	ErrUnavailable = errors.New("token verification unavailable")
)

// Options are the run-time parts of an Authenticator.
type Options struct {
	ListenAddr string // for the default resource URL
	Log        zerolog.Logger
	Client     *http.Client     // fetches discovery and JWKS for go-oidc; nil: a client with a 10 s timeout
	Now        func() time.Time // nil: time.Now
	// Rejected, when set, is told of each refused request: "missing", "invalid" or
	// "unavailable" (the issuer's keys could not be had).
	Rejected func(reason string)
}

// Authenticator checks bearer tokens and serves the RFC 9728 metadata.
type Authenticator struct {
	static      staticTokens
	oidc        *oidcVerifier
	resource    string
	metadataURL string
	metadata    server.ProtectedResourceMetadataConfig
	log         zerolog.Logger
	rejected    func(reason string)
}

// New builds an Authenticator; c must be Enabled.
func New(c Config, o Options) (*Authenticator, error) {
	if !c.Enabled() {
		return nil, errors.New("auth: no static tokens and no OIDC issuer configured")
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(r *http.Request, via []*http.Request) error {
			// A redirect must not downgrade the key fetch to plain http.
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			return checkFetchURL(r.URL.String())
		}}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	a := &Authenticator{static: newStaticTokens(c.Tokens), resource: c.Resource(o.ListenAddr), log: o.Log, rejected: o.Rejected}
	if a.rejected == nil {
		a.rejected = func(string) {}
	}
	u, err := url.Parse(a.resource)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%s: resource URL %q is not absolute", VarResourceURL, a.resource)
	}
	a.metadataURL = u.Scheme + "://" + u.Host + server.ProtectedResourceMetadataPath(a.resource)
	a.metadata = server.ProtectedResourceMetadataConfig{
		Resource:               a.resource,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "k8s-sandbox-mcp",
	}
	if c.OIDC.Issuer != "" {
		a.metadata.AuthorizationServers = []string{c.OIDC.Issuer}
		a.oidc = newOIDCVerifier(c.OIDC, o.Client, o.Now)
	}
	return a, nil
}

// Resource is the protected resource URL (the audience clients should ask tokens for).
func (a *Authenticator) Resource() string { return a.resource }

// Check fetches the issuer's keys now, so a misconfigured issuer shows at start-up rather than
// at the first call. Nil without OIDC. Failure is worth a warning, not a refusal to start:
// the issuer may simply be down for a moment.
func (a *Authenticator) Check(ctx context.Context) error {
	if a.oidc == nil {
		return nil
	}
	return a.oidc.keys.Check(ctx)
}

// Authenticate maps a bearer token to its principal. Errors wrap ErrInvalidToken or
// ErrUnavailable; their text is for the log only, never for the caller.
func (a *Authenticator) Authenticate(ctx context.Context, token string) (Principal, error) {
	if p, ok := a.static.lookup(token); ok {
		return p, nil
	}
	if a.oidc == nil || strings.Count(token, ".") != 2 {
		return Principal{}, fmt.Errorf("%w: not a known static token", ErrInvalidToken)
	}
	p, err := a.oidc.verify(ctx, token)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			return Principal{}, err
		}
		return Principal{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	return p, nil
}

// Middleware rejects requests without a valid bearer token (401 with a WWW-Authenticate
// challenge pointing at the metadata) and passes the rest on with the principal in the
// request context. The Authorization header is removed: tools must never see the token.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, given := bearer(r.Header)
		if token == "" {
			a.log.Debug().Str("remote", r.RemoteAddr).Bool("malformed", given).Msg("request without bearer token")
			a.rejected("missing")
			a.reject(w, given, "missing or malformed bearer token")
			return
		}
		p, err := a.Authenticate(r.Context(), token)
		if errors.Is(err, ErrUnavailable) {
			a.log.Error().Err(err).Msg("cannot verify tokens: issuer keys unavailable")
			a.rejected("unavailable")
			writeError(w, http.StatusServiceUnavailable, "token verification is temporarily unavailable")
			return
		}
		if err != nil {
			a.log.Warn().Str("remote", r.RemoteAddr).Str("reason", err.Error()).Msg("rejected bearer token")
			a.rejected("invalid")
			a.reject(w, true, "invalid token")
			return
		}
		r = r.WithContext(WithPrincipal(r.Context(), p))
		r.Header = r.Header.Clone()
		r.Header.Del("Authorization")
		next.ServeHTTP(w, r)
	})
}

func (a *Authenticator) reject(w http.ResponseWriter, tokenGiven bool, msg string) {
	challenge := `Bearer resource_metadata="` + a.metadataURL + `"`
	if tokenGiven {
		challenge = `Bearer error="invalid_token", resource_metadata="` + a.metadataURL + `"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	writeError(w, http.StatusUnauthorized, msg)
}

// Register serves the protected-resource metadata, unauthenticated, at the bare well-known
// path and at the resource-suffixed one (/.well-known/oauth-protected-resource/mcp).
func (a *Authenticator) Register(mux *http.ServeMux) {
	h := server.NewProtectedResourceMetadataHandler(a.metadata)
	mux.Handle(server.WellKnownProtectedResourcePath, h)
	if p := server.ProtectedResourceMetadataPath(a.resource); p != server.WellKnownProtectedResourcePath {
		mux.Handle(p, h)
	}
}

// MetadataURL is where the metadata document is advertised.
func (a *Authenticator) MetadataURL() string { return a.metadataURL }

// bearer returns the token of a single "Authorization: Bearer <token>" header; given reports
// whether any Authorization header was sent.
func bearer(h http.Header) (token string, given bool) {
	vals := h.Values("Authorization")
	if len(vals) != 1 {
		return "", len(vals) > 0
	}
	scheme, tok, ok := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", true
	}
	return strings.TrimSpace(tok), true
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
