package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"
)

const (
	maxDocumentBytes = 1 << 20
	minRSABits       = 2048
)

// keySet caches the issuer's JWKS. It refetches when the cache is older than maxAge or a token
// names an unknown kid (key rotation), but never more often than minRefresh, so tokens with
// made-up kids cannot make the server hammer the issuer.
type keySet struct {
	client     *http.Client
	issuer     string
	jwksURL    string // configured, or discovered on first use
	minRefresh time.Duration
	maxAge     time.Duration
	now        func() time.Time

	mu        sync.Mutex
	keys      []jwk
	fetchedAt time.Time
	triedAt   time.Time
	lastErr   error
}

type jwk struct {
	kid, alg string
	key      crypto.PublicKey
}

// candidates returns the keys that may have signed a token with this kid and alg.
func (ks *keySet) candidates(ctx context.Context, kid, alg string) ([]crypto.PublicKey, error) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if len(ks.keys) == 0 || ks.now().Sub(ks.fetchedAt) > ks.maxAge {
		ks.refresh(ctx)
	}
	if keys := ks.match(kid, alg); len(keys) > 0 {
		return keys, nil
	}
	if ks.refresh(ctx) {
		if keys := ks.match(kid, alg); len(keys) > 0 {
			return keys, nil
		}
	}
	if len(ks.keys) == 0 {
		return nil, fmt.Errorf("%w: no signing keys: %w", ErrUnavailable, ks.lastErr)
	}
	return nil, fmt.Errorf("no key with kid %q for alg %s in the issuer's JWKS", kid, alg)
}

// refresh fetches the key set unless it was tried within minRefresh, and reports whether
// it fetched. A failed fetch keeps the old keys: a flaky issuer must not log everyone out.
func (ks *keySet) refresh(ctx context.Context) bool {
	if !ks.triedAt.IsZero() && ks.now().Sub(ks.triedAt) < ks.minRefresh {
		return false
	}
	ks.triedAt = ks.now()
	keys, err := ks.fetch(ctx)
	if err != nil {
		ks.lastErr = err
		return false
	}
	ks.keys, ks.fetchedAt, ks.lastErr = keys, ks.now(), nil
	return true
}

func (ks *keySet) match(kid, alg string) []crypto.PublicKey {
	var out []crypto.PublicKey
	for _, k := range ks.keys {
		if (kid != "" && k.kid != kid) || (k.alg != "" && k.alg != alg) || !keyFits(k.key, alg) {
			continue
		}
		out = append(out, k.key)
	}
	return out
}

func (ks *keySet) fetch(ctx context.Context) ([]jwk, error) {
	if ks.jwksURL == "" {
		var doc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := ks.getJSON(ctx, strings.TrimSuffix(ks.issuer, "/")+"/.well-known/openid-configuration", &doc); err != nil {
			return nil, fmt.Errorf("OIDC discovery: %w", err)
		}
		if doc.Issuer != ks.issuer {
			return nil, fmt.Errorf("OIDC discovery: document names issuer %q, configured %q", doc.Issuer, ks.issuer)
		}
		if err := checkFetchURL(doc.JWKSURI); err != nil {
			return nil, fmt.Errorf("OIDC discovery: jwks_uri %w", err)
		}
		ks.jwksURL = doc.JWKSURI
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := ks.getJSON(ctx, ks.jwksURL, &set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	var keys []jwk
	for _, raw := range set.Keys {
		// Keys we cannot use (encryption keys, other types) are skipped, not fatal.
		if k, err := parseJWK(raw); err == nil {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("JWKS at %s holds no usable signing key", ks.jwksURL)
	}
	return keys, nil
}

func (ks *keySet) getJSON(ctx context.Context, url string, v any) error {
	// Detached from the caller: a client hanging up must not abort (and so rate-limit) a refresh.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := ks.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if len(body) > maxDocumentBytes {
		return fmt.Errorf("GET %s: document larger than %d bytes", url, maxDocumentBytes)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

func parseJWK(raw json.RawMessage) (jwk, error) {
	var j struct {
		Kty, Kid, Alg, Use, Crv string
		N, E, X, Y              string
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		return jwk{}, err
	}
	if j.Use != "" && j.Use != "sig" {
		return jwk{}, errors.New("not a signing key")
	}
	out := jwk{kid: j.Kid, alg: j.Alg}
	switch j.Kty {
	case "RSA":
		n, err1 := b64(j.N)
		e, err2 := b64(j.E)
		if err := errors.Join(err1, err2); err != nil {
			return jwk{}, err
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if pub.N.BitLen() < minRSABits || len(e) > 4 || pub.E < 3 || pub.E%2 == 0 {
			return jwk{}, errors.New("weak or malformed RSA key")
		}
		out.key = pub
	case "EC":
		curve := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}[j.Crv]
		x, err1 := b64(j.X)
		y, err2 := b64(j.Y)
		if curve == nil || errors.Join(err1, err2) != nil {
			return jwk{}, errors.New("unsupported or malformed EC key")
		}
		// ParseUncompressedPublicKey checks the point is on the curve.
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
		if err != nil {
			return jwk{}, err
		}
		out.key = pub
	case "OKP":
		x, err := b64(j.X)
		if j.Crv != "Ed25519" || err != nil || len(x) != ed25519.PublicKeySize {
			return jwk{}, errors.New("unsupported or malformed OKP key")
		}
		out.key = ed25519.PublicKey(x)
	default:
		return jwk{}, fmt.Errorf("unsupported key type %q", j.Kty)
	}
	return out, nil
}

func b64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}
