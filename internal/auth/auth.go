// Package auth authenticates streamable-HTTP callers. A caller presents a bearer token: either
// one of the operator's static tokens, each naming a principal, or an OIDC access token (a
// JWT checked against the issuer's JWKS). The principal then travels in the request context
// and becomes part of the ownership key, so a token holder only sees its own sandboxes.
package auth

import "context"

// Principal names an authenticated caller: the operator's name for a static token, or the
// configured claim (default "sub") of an OIDC token.
type Principal string

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the authenticated principal, false when the request was not
// authenticated (stdio, or HTTP without authentication configured).
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok && p != ""
}
