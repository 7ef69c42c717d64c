package auth

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
)

// keySet is the oidc.KeySet the verifier checks signatures with: the issuer's JWKS (found by
// discovery unless configured), checked by go-oidc's StaticKeySet. All fetches go through a
// fetcher (rate limit, last good copy, https only, size cap). Keys are refetched when a token
// fails with the ones held (the issuer may have rotated) and at least every maxKeyAge, so a
// key the issuer has withdrawn stops being trusted within that time.
//
// Not go-oidc's RemoteKeySet: it releases the waiters of a refresh before it frees its
// in-flight slot, so under load a token checked just after a refresh got that refresh's older
// keys and was refused (seen as a flaky rotation test). Here a refresh is one locked call.
type keySet struct {
	issuer  string
	fetch   *fetcher
	now     func() time.Time
	discURL string

	mu      sync.Mutex
	jwksURL string // configured, or discovered on first use
	keys    []jose.JSONWebKey
	born    time.Time
}

func newKeySet(issuer, jwksURL string, client *http.Client, now func() time.Time) *keySet {
	k := &keySet{issuer: issuer, jwksURL: jwksURL, now: now,
		discURL: strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"}
	k.fetch = newFetcher(client, minKeyRefresh, now, func(url string, body []byte) error {
		if url == k.discURL {
			var doc map[string]any
			return json.Unmarshal(body, &doc)
		}
		return usableJWKS(body)
	})
	return k
}

// VerifySignature implements oidc.KeySet.
func (k *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	keys, err := k.current(ctx, false)
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		reportKeysErr(ctx, err)
		return nil, err
	}
	kid := keyID(jwt)
	payload, err := (&oidc.StaticKeySet{PublicKeys: named(keys, kid)}).VerifySignature(ctx, jwt)
	if err == nil {
		return payload, nil
	}
	// Perhaps a key the issuer has just published: ask again (the fetcher refetches at most
	// once per minKeyRefresh, however many such tokens arrive).
	if fresh, ferr := k.current(ctx, true); ferr == nil {
		payload, err = (&oidc.StaticKeySet{PublicKeys: named(fresh, kid)}).VerifySignature(ctx, jwt)
	}
	return payload, err
}

// Check discovers the JWKS URL if needed and fetches the keys, so that a misconfigured issuer
// shows at start-up. The copy it fetches is the one the first tokens are checked against.
func (k *keySet) Check(ctx context.Context) error {
	_, err := k.current(ctx, false)
	return err
}

// current returns the keys to check with, asking the fetcher again when refresh is set or
// the keys are older than maxKeyAge. The fetcher keeps its last good copy through an outage.
func (k *keySet) current(ctx context.Context, refresh bool) ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.jwksURL == "" {
		url, err := k.discover(ctx)
		if err != nil {
			return nil, err
		}
		k.jwksURL = url
	}
	age := k.now().Sub(k.born)
	// Within minKeyRefresh the fetcher would hand back the copy these keys came from: a flood
	// of bad tokens costs no decoding and no lock time.
	if k.keys != nil && (age < minKeyRefresh || !refresh && age <= maxKeyAge) {
		return k.keys, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.jwksURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := k.fetch.RoundTrip(req)
	if err != nil {
		if fetched, lastErr := k.fetch.state(k.jwksURL); !fetched {
			return nil, fmt.Errorf("no signing keys: %w", lastErr)
		}
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the JWKS: %w", err)
	}
	keys, err := signingKeys(body)
	if err != nil {
		return nil, fmt.Errorf("reading the JWKS: %w", err)
	}
	k.keys, k.born = keys, k.now()
	return keys, nil
}

// keyID is the kid a token's header names ("" if none or unreadable: verification then fails
// on its own terms).
func keyID(jwt string) string {
	jws, err := jose.ParseSignedCompact(jwt, signingAlgs)
	if err != nil || len(jws.Signatures) == 0 {
		return ""
	}
	return jws.Signatures[0].Header.KeyID
}

// named returns the keys a kid selects, as RemoteKeySet did: a token naming a key is checked
// only against that key; one naming none, against all.
func named(keys []jose.JSONWebKey, kid string) []crypto.PublicKey {
	out := make([]crypto.PublicKey, 0, len(keys))
	for _, key := range keys {
		if kid == "" || key.KeyID == kid {
			out = append(out, key.Key)
		}
	}
	return out
}

func (k *keySet) discover(ctx context.Context) (string, error) {
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, k.fetch.Client()), k.issuer)
	var mismatch *oidc.IssuerMismatchError
	if errors.As(err, &mismatch) {
		return "", fmt.Errorf("OIDC discovery: document names issuer %q, configured %q", mismatch.Discovered, mismatch.Provided)
	}
	if err != nil {
		return "", fmt.Errorf("OIDC discovery: %w", err)
	}
	var doc struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := p.Claims(&doc); err != nil {
		return "", fmt.Errorf("OIDC discovery: %w", err)
	}
	if err := checkFetchURL(doc.JWKSURI); err != nil {
		return "", fmt.Errorf("OIDC discovery: jwks_uri %w", err)
	}
	return doc.JWKSURI, nil
}

// usableJWKS accepts a JWKS holding at least one public signing key go-jose can read: a body
// without one must not replace a good copy.
func usableJWKS(body []byte) error {
	keys, err := signingKeys(body)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return errors.New("the JWKS holds no usable signing key")
	}
	return nil
}

// signingKeys reads a JWKS's valid public keys not reserved for encryption, skipping any key
// go-jose cannot read (a type it does not know must not hide the others).
func signingKeys(body []byte) ([]jose.JSONWebKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, err
	}
	out := make([]jose.JSONWebKey, 0, len(set.Keys))
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if key.UnmarshalJSON(raw) == nil && key.Valid() && key.IsPublic() && key.Use != "enc" {
			out = append(out, key)
		}
	}
	return out, nil
}
