// Package auth authenticates streamable-HTTP callers. A caller presents a bearer token: either
// one of the operator's static tokens, each naming a principal, or an OIDC access token (a
// JWT that github.com/coreos/go-oidc checks against the issuer's JWKS). The principal then
// travels in the request context and becomes part of the ownership key, so a token holder
// only sees its own sandboxes.
package auth

import "context"

const sourceStatic = "static"

// Principal names an authenticated caller together with where the name comes from: the
// operator's name for a static token, or the configured claim (default "sub") of a token
// from one OIDC issuer. The source is part of its identity: the static principal "alice"
// and an OIDC token whose sub is "alice" are different callers, since whoever controls the
// issuer (or, for claims like email, the user) chooses that name, not the operator.
// Compare principals with == and key maps with String, never with Name.
type Principal struct {
	source string // sourceStatic, or "oidc:" + issuer
	name   string
}

// Static is the principal of one of the operator's static tokens.
func Static(name string) Principal { return Principal{source: sourceStatic, name: name} }

// OIDC is the principal named name by tokens from issuer.
func OIDC(issuer, name string) Principal { return Principal{source: "oidc:" + issuer, name: name} }

// Name is the bare name, for messages only: it does not identify the caller on its own.
func (p Principal) Name() string { return p.name }

// IsZero reports whether p is no principal at all.
func (p Principal) IsZero() bool { return p == Principal{} }

// String is the source-qualified form, the one to compare, key maps with and write into
// labels: "static:alice" or "oidc:https://idp.example.com#alice". It is unambiguous: the two
// prefixes differ, and an issuer URL never contains "#" (LoadConfig refuses one).
func (p Principal) String() string {
	if p.IsZero() {
		return ""
	}
	if p.source == sourceStatic {
		return sourceStatic + ":" + p.name
	}
	return p.source + "#" + p.name
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the authenticated principal, false when the request was not
// authenticated (stdio, or HTTP without authentication configured).
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok && p.name != ""
}
