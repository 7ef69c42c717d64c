// Package authtest is a fake OIDC issuer for tests: it serves discovery and a JWKS from
// httptest and signs tokens with in-test keys, good ones and deliberately bad ones.
package authtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Key ids the issuer publishes.
const (
	KidRSA = "rsa-1"
	KidEC  = "ec-1"
)

// Issuer is a running fake issuer. URL is its issuer identifier.
type Issuer struct {
	URL      string
	Audience string
	RSA      *rsa.PrivateKey
	EC       *ecdsa.PrivateKey

	srv       *httptest.Server
	jwksHits  atomic.Int64
	down      atomic.Bool
	mu        sync.Mutex
	published []map[string]string
}

// NewIssuer starts an issuer publishing KidRSA and KidEC; tokens default to audience aud.
func NewIssuer(t testing.TB, aud string) *Issuer {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is := &Issuer{Audience: aud, RSA: rk, EC: ek}
	is.Publish(t, KidRSA, &rk.PublicKey)
	is.Publish(t, KidEC, &ek.PublicKey)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": is.URL, "jwks_uri": is.URL + "/jwks"})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		is.jwksHits.Add(1)
		if is.down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		is.mu.Lock()
		defer is.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": is.published})
	})
	is.srv = httptest.NewServer(mux)
	is.URL = is.srv.URL
	t.Cleanup(is.srv.Close)
	return is
}

// Publish adds a public key to the JWKS (key rotation).
func (is *Issuer) Publish(t testing.TB, kid string, pub crypto.PublicKey) {
	t.Helper()
	j := map[string]string{"kid": kid, "use": "sig"}
	switch k := pub.(type) {
	case *rsa.PublicKey:
		j["kty"], j["alg"] = "RSA", "RS256"
		j["n"] = enc(k.N.Bytes())
		j["e"] = enc(big.NewInt(int64(k.E)).Bytes())
	case *ecdsa.PublicKey:
		raw, err := k.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		size := (len(raw) - 1) / 2
		j["kty"], j["crv"], j["alg"] = "EC", "P-256", "ES256"
		j["x"], j["y"] = enc(raw[1:1+size]), enc(raw[1+size:])
	default:
		t.Fatalf("authtest: unsupported key %T", pub)
	}
	is.mu.Lock()
	is.published = append(is.published, j)
	is.mu.Unlock()
}

// Withdraw removes a key from the JWKS.
func (is *Issuer) Withdraw(kid string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.published = slices.DeleteFunc(is.published, func(j map[string]string) bool { return j["kid"] == kid })
}

// SetDown makes the JWKS answer 503 (true) or serve the keys again (false).
func (is *Issuer) SetDown(down bool) { is.down.Store(down) }

// JWKSRequests counts JWKS fetches.
func (is *Issuer) JWKSRequests() int { return int(is.jwksHits.Load()) }

// Claims are valid claims for sub: this issuer, its audience, five minutes left.
func (is *Issuer) Claims(sub string) map[string]any {
	now := time.Now()
	return map[string]any{"iss": is.URL, "aud": is.Audience, "sub": sub, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()}
}

// Sign signs claims with the issuer's key for alg ("RS256" or "ES256") under its kid.
func (is *Issuer) Sign(t testing.TB, alg string, claims map[string]any) string {
	if alg == "ES256" {
		return Sign(t, is.EC, alg, KidEC, claims)
	}
	return Sign(t, is.RSA, alg, KidRSA, claims)
}

// Sign builds a compact JWS. key is *rsa.PrivateKey (RS256), *ecdsa.PrivateKey (ES256),
// []byte (HS256) or nil (alg "none", empty signature).
func Sign(t testing.TB, key any, alg, kid string, claims map[string]any) string {
	t.Helper()
	hdr := map[string]string{"alg": alg, "typ": "JWT"}
	if kid != "" {
		hdr["kid"] = kid
	}
	input := seg(t, hdr) + "." + seg(t, claims)
	digest := sha256.Sum256([]byte(input))
	var sig []byte
	var err error
	switch k := key.(type) {
	case *rsa.PrivateKey:
		sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, digest[:])
	case *ecdsa.PrivateKey:
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, k, digest[:])
		if err == nil {
			sig = make([]byte, 64)
			r.FillBytes(sig[:32])
			s.FillBytes(sig[32:])
		}
	case []byte:
		m := hmac.New(sha256.New, k)
		m.Write([]byte(input))
		sig = m.Sum(nil)
	case nil:
	default:
		t.Fatalf("authtest: unsupported key %T", key)
	}
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + enc(sig)
}

func seg(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return enc(b)
}

func enc(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
