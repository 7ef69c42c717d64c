package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth/authtest"
)

const audience = "https://mcp.example.com/mcp"

// clock is a settable time source shared by the authenticator and its key cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newOIDC(t *testing.T, is *authtest.Issuer, mutate func(*Config)) (*Authenticator, *clock) {
	t.Helper()
	c := Config{
		Tokens:      []Token{{"alice", tokA}, {"bob", tokB}},
		OIDC:        OIDCConfig{Issuer: is.URL, Audience: audience, PrincipalClaim: "sub"},
		ResourceURL: audience,
	}
	if mutate != nil {
		mutate(&c)
	}
	clk := &clock{t: time.Now()}
	a, err := New(c, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return a, clk
}

func TestAuthenticate(t *testing.T) {
	is := authtest.NewIssuer(t, audience)
	otherRSA, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	otherEC, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	is.Publish(t, "rsa-weak", &weak.PublicKey)
	with := func(sub string, edit func(map[string]any)) map[string]any {
		c := is.Claims(sub)
		edit(c)
		return c
	}
	now := time.Now()
	tampered := func() string {
		tok := is.Sign(t, "RS256", is.Claims("erin"))
		parts := strings.Split(tok, ".")
		forged := strings.Split(is.Sign(t, "RS256", is.Claims("mallory")), ".")
		return parts[0] + "." + forged[1] + "." + parts[2]
	}()

	alice, bob := Static("alice"), Static("bob")
	erin, frank := OIDC(is.URL, "erin"), OIDC(is.URL, "frank")
	var invalid Principal
	tests := []struct {
		name  string
		token string
		want  Principal // zero means rejected as invalid
	}{
		{"static alice", tokA, alice},
		{"static bob", tokB, bob},
		{"wrong static", "alice-token-0123456780", invalid},
		{"prefix of static", tokA[:16], invalid},
		{"static plus suffix", tokA + "x", invalid},
		{"RS256", is.Sign(t, "RS256", is.Claims("erin")), erin},
		{"ES256", is.Sign(t, "ES256", is.Claims("frank")), frank},
		{"audience array", is.Sign(t, "RS256", with("erin", func(c map[string]any) { c["aud"] = []string{"other", audience} })), erin},
		{"expired within leeway", is.Sign(t, "RS256", with("erin", func(c map[string]any) { c["exp"] = now.Add(-10 * time.Second).Unix() })), erin},
		{"expired", is.Sign(t, "RS256", with("erin", func(c map[string]any) { c["exp"] = now.Add(-2 * time.Minute).Unix() })), invalid},
		{"no exp", is.Sign(t, "RS256", with("erin", func(c map[string]any) { delete(c, "exp") })), invalid},
		{"exp as string", is.Sign(t, "RS256", with("erin", func(c map[string]any) { c["exp"] = "tomorrow" })), invalid},
		{"not yet valid", is.Sign(t, "RS256", with("erin", func(c map[string]any) { c["nbf"] = now.Add(5 * time.Minute).Unix() })), invalid},
		{"issued in the future", is.Sign(t, "RS256", with("erin", func(c map[string]any) { c["iat"] = now.Add(5 * time.Minute).Unix() })), invalid},
		{"wrong audience", is.Sign(t, "RS256", with("erin", func(c map[string]any) { c["aud"] = "https://other.example.com" })), invalid},
		{"audience array without us", is.Sign(t, "RS256", with("erin", func(c map[string]any) { c["aud"] = []string{"a", "b"} })), invalid},
		{"no audience", is.Sign(t, "RS256", with("erin", func(c map[string]any) { delete(c, "aud") })), invalid},
		{"wrong issuer", is.Sign(t, "RS256", with("erin", func(c map[string]any) { c["iss"] = is.URL + "/evil" })), invalid},
		{"empty subject", is.Sign(t, "RS256", with("", func(map[string]any) {})), invalid},
		{"bad RSA signature", authtest.Sign(t, otherRSA, "RS256", authtest.KidRSA, is.Claims("erin")), invalid},
		{"bad EC signature", authtest.Sign(t, otherEC, "ES256", authtest.KidEC, is.Claims("erin")), invalid},
		{"tampered claims", tampered, invalid},
		{"alg none", authtest.Sign(t, nil, "none", authtest.KidRSA, is.Claims("erin")), invalid},
		{"HS256 keyed with public key", authtest.Sign(t, is.RSA.PublicKey.N.Bytes(), "HS256", authtest.KidRSA, is.Claims("erin")), invalid},
		{"RS256 naming the EC key", authtest.Sign(t, is.RSA, "RS256", authtest.KidEC, is.Claims("erin")), invalid},
		{"unknown kid", authtest.Sign(t, otherRSA, "RS256", "rsa-unknown", is.Claims("erin")), invalid},
		{"garbage", "a.b.c", invalid},
		{"published 1024-bit RSA key", authtest.Sign(t, weak, "RS256", "rsa-weak", is.Claims("erin")), invalid},
	}
	a, _ := newOIDC(t, is, nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := a.Authenticate(context.Background(), tc.token)
			if !tc.want.IsZero() {
				if err != nil || p != tc.want {
					t.Fatalf("got %q, %v; want %q", p, err, tc.want)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalidToken) || !p.IsZero() {
				t.Fatalf("got %q, %v; want ErrInvalidToken", p, err)
			}
			if strings.Contains(err.Error(), tc.token) {
				t.Errorf("error text contains the token")
			}
		})
	}
}

func TestKeyRotationIsRateLimited(t *testing.T) {
	is := authtest.NewIssuer(t, audience)
	a, clk := newOIDC(t, is, nil)
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, is.Sign(t, "RS256", is.Claims("erin"))); err != nil {
		t.Fatal(err)
	}
	newKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rotated := authtest.Sign(t, newKey, "RS256", "rsa-2", is.Claims("erin"))
	// The first unknown kid right after a fetch does not refetch; nor do a flood of them.
	for range 5 {
		if _, err := a.Authenticate(ctx, rotated); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("unpublished key accepted or wrong error: %v", err)
		}
	}
	if n := is.JWKSRequests(); n != 1 {
		t.Fatalf("JWKS fetched %d times, want 1 (rate limit)", n)
	}
	is.Publish(t, "rsa-2", &newKey.PublicKey)
	clk.Advance(20 * time.Second)
	if p, err := a.Authenticate(ctx, rotated); err != nil || p != OIDC(is.URL, "erin") {
		t.Fatalf("rotated key: %q, %v", p, err)
	}
	if n := is.JWKSRequests(); n != 2 {
		t.Fatalf("JWKS fetched %d times, want 2", n)
	}
}

func TestPrincipalClaim(t *testing.T) {
	is := authtest.NewIssuer(t, audience)
	a, _ := newOIDC(t, is, func(c *Config) { c.OIDC.PrincipalClaim = "email" })
	claims := is.Claims("123")
	claims["email"] = "erin@example.com"
	if p, err := a.Authenticate(context.Background(), is.Sign(t, "ES256", claims)); err != nil || p != OIDC(is.URL, "erin@example.com") {
		t.Fatalf("got %q, %v", p, err)
	}
	if _, err := a.Authenticate(context.Background(), is.Sign(t, "ES256", is.Claims("123"))); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("token without the claim: %v", err)
	}
}

func TestIssuerUnavailable(t *testing.T) {
	is := authtest.NewIssuer(t, audience)
	down := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(down.Close)
	a, _ := newOIDC(t, is, func(c *Config) { c.OIDC.JWKSURL = down.URL + "/jwks" })
	if err := a.Check(context.Background()); err == nil {
		t.Error("Check passed with a JWKS URL that answers 404")
	}
	_, err := a.Authenticate(context.Background(), is.Sign(t, "RS256", is.Claims("erin")))
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	// Static tokens keep working while the issuer is down.
	if p, err := a.Authenticate(context.Background(), tokA); err != nil || p != Static("alice") {
		t.Fatalf("static: %q, %v", p, err)
	}
}

func TestDiscoveryIssuerMismatch(t *testing.T) {
	is := authtest.NewIssuer(t, audience)
	a, _ := newOIDC(t, is, func(c *Config) { c.OIDC.Issuer = is.URL + "/" })
	err := a.Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "document names issuer") {
		t.Fatalf("got %v", err)
	}
}

// claimsAt are valid claims for sub at the test clock's time.
func claimsAt(is *authtest.Issuer, clk *clock, sub string) map[string]any {
	c := is.Claims(sub)
	c["iat"], c["exp"] = clk.Now().Unix(), clk.Now().Add(5*time.Minute).Unix()
	return c
}

// The issuer going down must not log everyone out: the last good keys stay in use, also past
// the age at which they are normally refetched.
func TestKeysOutliveAFlakyIssuer(t *testing.T) {
	is := authtest.NewIssuer(t, audience)
	a, clk := newOIDC(t, is, nil)
	ctx := context.Background()
	if err := a.Check(ctx); err != nil {
		t.Fatal(err)
	}
	is.SetDown(true)
	clk.Advance(2 * time.Hour)
	if p, err := a.Authenticate(ctx, is.Sign(t, "RS256", claimsAt(is, clk, "erin"))); err != nil || p != OIDC(is.URL, "erin") {
		t.Fatalf("with the issuer down: %v, %v", p, err)
	}
	if n := is.JWKSRequests(); n != 2 {
		t.Fatalf("JWKS fetched %d times, want 2 (the refetch after maxKeyAge)", n)
	}
	if err := a.Check(ctx); err != nil {
		t.Errorf("Check with good keys in hand: %v", err)
	}
}

// A key the issuer withdraws stops being trusted once the keys are refetched for age, even
// if no token ever names an unknown kid.
func TestWithdrawnKeyExpires(t *testing.T) {
	is := authtest.NewIssuer(t, audience)
	a, clk := newOIDC(t, is, nil)
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, is.Sign(t, "ES256", claimsAt(is, clk, "erin"))); err != nil {
		t.Fatal(err)
	}
	is.Withdraw(authtest.KidEC)
	clk.Advance(30 * time.Minute)
	if _, err := a.Authenticate(ctx, is.Sign(t, "ES256", claimsAt(is, clk, "erin"))); err != nil {
		t.Fatalf("within maxKeyAge the cached key still counts: %v", err)
	}
	clk.Advance(31 * time.Minute)
	if _, err := a.Authenticate(ctx, is.Sign(t, "ES256", claimsAt(is, clk, "erin"))); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("withdrawn key after maxKeyAge: %v", err)
	}
	if _, err := a.Authenticate(ctx, is.Sign(t, "RS256", claimsAt(is, clk, "erin"))); err != nil {
		t.Fatalf("the key still published: %v", err)
	}
}
