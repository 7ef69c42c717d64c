package auth

import (
	"context"
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

// keySet is the oidc.KeySet the verifier checks signatures with: go-oidc's RemoteKeySet for
// the issuer's JWKS, found by discovery unless configured. All fetches go through a fetcher
// (rate limit, last good copy, https only, size cap). RemoteKeySet keeps keys until a token
// names an unknown kid; keySet starts a fresh one every maxKeyAge so that a key the issuer
// has withdrawn stops being trusted within that time even if no rotation happens.
type keySet struct {
	issuer  string
	fetch   *fetcher
	now     func() time.Time
	discURL string

	mu      sync.Mutex
	jwksURL string // configured, or discovered on first use
	remote  *oidc.RemoteKeySet
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
	remote, url, err := k.current(ctx)
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		reportKeysErr(ctx, err)
		return nil, err
	}
	payload, err := remote.VerifySignature(ctx, jwt)
	if err != nil {
		if fetched, lastErr := k.fetch.state(url); !fetched {
			err = fmt.Errorf("%w: no signing keys: %w", ErrUnavailable, lastErr)
			reportKeysErr(ctx, err)
		}
		return nil, err
	}
	return payload, nil
}

// Check discovers the JWKS URL if needed and fetches the keys, so that a misconfigured issuer
// shows at start-up. The copy it fetches is the one the first tokens are checked against.
func (k *keySet) Check(ctx context.Context) error {
	_, url, err := k.current(ctx)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := k.fetch.RoundTrip(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// current returns the RemoteKeySet to use and its URL.
func (k *keySet) current(ctx context.Context) (*oidc.RemoteKeySet, string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.jwksURL == "" {
		url, err := k.discover(ctx)
		if err != nil {
			return nil, "", err
		}
		k.jwksURL = url
	}
	if k.remote == nil || k.now().Sub(k.born) > maxKeyAge {
		// go-oidc takes the client from the context, which it keeps as configuration only.
		k.remote = oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), k.fetch.Client()), k.jwksURL)
		k.born = k.now()
	}
	return k.remote, k.jwksURL, nil
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
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return err
	}
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if key.UnmarshalJSON(raw) == nil && key.Valid() && key.IsPublic() && key.Use != "enc" {
			return nil
		}
	}
	return errors.New("the JWKS holds no usable signing key")
}
