package auth

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
)

const (
	maxTokenBytes = 16 << 10
	leeway        = 30 * time.Second
	minRSABits    = 2048
	// How often the JWKS may be fetched at most, and how long keys are trusted without one.
	minKeyRefresh = 15 * time.Second
	maxKeyAge     = time.Hour
)

// signingAlgs are the accepted signature algorithms. "none" and the HMAC family are absent on
// purpose: HMAC keyed with the issuer's public key is the classic forgery.
var signingAlgs = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// oidcVerifier checks JWT access tokens with go-oidc: signature against the issuer's JWKS
// (keySet), iss, aud, exp and nbf. It adds what go-oidc leaves to its callers: a size cap,
// compact serialization only, a minimum RSA key size, a leeway of its own on exp, nbf and iat
// (go-oidc has none on exp, five minutes on nbf and does not look at iat), and the principal
// claim.
type oidcVerifier struct {
	issuer, claim string
	keys          *keySet
	verifier      *oidc.IDTokenVerifier
	now           func() time.Time
}

func newOIDCVerifier(c OIDCConfig, client *http.Client, now func() time.Time) *oidcVerifier {
	keys := newKeySet(c.Issuer, c.JWKSURL, client, now)
	algs := make([]string, len(signingAlgs))
	for i, a := range signingAlgs {
		algs[i] = string(a)
	}
	return &oidcVerifier{
		issuer: c.Issuer, claim: c.PrincipalClaim, keys: keys, now: now,
		verifier: oidc.NewVerifier(c.Issuer, keys, &oidc.Config{
			ClientID:             c.Audience,
			SupportedSigningAlgs: algs,
			// go-oidc refuses a token once now passes exp; looking from leeway earlier gives exp
			// the same grace as nbf and iat below.
			Now: func() time.Time { return now().Add(-leeway) },
		}),
	}
}

// verify returns the principal a token names. Errors wrap ErrUnavailable when the issuer's
// keys could not be had; every other error means the token is not acceptable.
func (v *oidcVerifier) verify(ctx context.Context, token string) (Principal, error) {
	if len(token) > maxTokenBytes {
		return Principal{}, errors.New("token too large")
	}
	// go-oidc would also take the JWS JSON serialization; bearer tokens are compact.
	jws, err := jose.ParseSignedCompact(token, signingAlgs)
	if err != nil {
		return Principal{}, fmt.Errorf("not a compact JWS with an accepted algorithm: %w", err)
	}
	// An RSA signature is exactly as long as the key's modulus.
	if alg := jws.Signatures[0].Header.Algorithm; alg[0] != 'E' && len(jws.Signatures[0].Signature)*8 < minRSABits {
		return Principal{}, fmt.Errorf("%s signature from an RSA key shorter than %d bits", alg, minRSABits)
	}
	var keysErr error
	tok, err := v.verifier.Verify(context.WithValue(ctx, keysErrKey{}, &keysErr), token)
	if keysErr != nil {
		return Principal{}, keysErr
	}
	if err != nil {
		return Principal{}, err
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return Principal{}, fmt.Errorf("claims: %w", err)
	}
	now := v.now()
	for _, name := range []string{"nbf", "iat"} {
		// go-oidc has already checked that both, if present, are numbers.
		if t, ok := claims[name].(float64); ok && now.Add(leeway).Before(unixTime(t)) {
			return Principal{}, fmt.Errorf("claim %s lies in the future", name)
		}
	}
	p, _ := claims[v.claim].(string)
	if err := checkPrincipal(p); err != nil {
		return Principal{}, fmt.Errorf("claim %q: %w", v.claim, err)
	}
	return OIDC(v.issuer, p), nil
}

func unixTime(f float64) time.Time {
	sec := math.Floor(f)
	return time.Unix(int64(sec), int64((f-sec)*1e9))
}

// keysErrKey carries a *error through go-oidc, which flattens the key set's errors into text:
// the key set stores an ErrUnavailable there when it has no keys to check with.
type keysErrKey struct{}

func reportKeysErr(ctx context.Context, err error) {
	if p, ok := ctx.Value(keysErrKey{}).(*error); ok {
		*p = err
	}
}
