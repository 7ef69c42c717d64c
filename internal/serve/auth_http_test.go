package serve

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth/authtest"
)

const metadataURL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"

func TestBearerTokens(t *testing.T) {
	e := newEnv(t, envOpts{})
	is := e.issuer
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	claims := func(edit func(map[string]any)) map[string]any {
		c := is.Claims("erin")
		edit(c)
		return c
	}
	tests := []struct {
		name  string
		token string
		want  string // principal the tool sees; "" means 401
	}{
		{"no token", "", ""},
		{"wrong static token", "alice-token-0123456780", ""},
		{"expired JWT", is.Sign(t, "RS256", claims(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })), ""},
		{"wrong audience", is.Sign(t, "RS256", claims(func(c map[string]any) { c["aud"] = "https://other.example.com/mcp" })), ""},
		{"wrong issuer", is.Sign(t, "ES256", claims(func(c map[string]any) { c["iss"] = "https://evil.example.com" })), ""},
		{"bad signature", authtest.Sign(t, otherKey, "RS256", authtest.KidRSA, is.Claims("erin")), ""},
		{"alg none", authtest.Sign(t, nil, "none", authtest.KidRSA, is.Claims("erin")), ""},
		{"HS256 with the public key", authtest.Sign(t, is.RSA.PublicKey.N.Bytes(), "HS256", authtest.KidRSA, is.Claims("erin")), ""},
		{"unknown kid", authtest.Sign(t, otherKey, "RS256", "rotated-away", is.Claims("erin")), ""},
		{"static alice", tokAlice, "alice"},
		{"static bob", tokBob, "bob"},
		{"RS256 JWT", is.Sign(t, "RS256", is.Claims("erin")), "erin"},
		{"ES256 JWT", is.Sign(t, "ES256", is.Claims("frank")), "frank"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := e.client(t, tc.token)
			resp, body := c.do(http.MethodPost, "/mcp", rpc(1, "initialize", map[string]any{
				"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"},
			}), nil)
			if tc.want == "" {
				challenge, wantBody := `Bearer error="invalid_token", resource_metadata="`+metadataURL+`"`, `{"error":"invalid token"}`
				if tc.token == "" {
					challenge, wantBody = `Bearer resource_metadata="`+metadataURL+`"`, `{"error":"missing or malformed bearer token"}`
				}
				if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != challenge || strings.TrimSpace(body) != wantBody {
					t.Fatalf("got %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
				}
				if resp.Header.Get("Mcp-Session-Id") != "" {
					t.Error("a session was opened for an unauthenticated caller")
				}
				noLeak(t, body, tc.token)
				return
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("initialize: %d %s", resp.StatusCode, body)
			}
			c.session = resp.Header.Get("Mcp-Session-Id")
			got := c.call("whoami", nil)
			if got.status != http.StatusOK || got.isError || got.text != tc.want+"|"+c.session {
				t.Fatalf("whoami: %+v", got)
			}
			noLeak(t, got.body, tc.token)
		})
	}
}

// The token must not reach tool handlers (mcp-go copies request headers into CallToolRequest).
func TestToolsNeverSeeTheToken(t *testing.T) {
	e := newEnv(t, envOpts{})
	c := e.client(t, tokAlice)
	if code := c.initialize(); code != http.StatusOK {
		t.Fatalf("initialize: %d", code)
	}
	if got := c.call("headers", nil); got.text != "authorization=" {
		t.Fatalf("tool saw %q", got.text)
	}
}

// Protocol 2026-07-28 has no sessions: the principal alone must still arrive.
func TestPrincipalInSessionlessEra(t *testing.T) {
	e := newEnv(t, envOpts{})
	for token, want := range map[string]string{tokAlice: "alice|", tokBob: "bob|"} {
		c := e.client(t, token)
		v := mcp.ProtocolVersion20260728
		resp, body := c.do(http.MethodPost, "/mcp", rpc(7, "tools/call", map[string]any{
			"name": "whoami", "arguments": map[string]any{},
			"_meta": map[string]any{mcp.MetaKeyProtocolVersion: v, mcp.MetaKeyClientCapabilities: map[string]any{},
				mcp.MetaKeyClientInfo: map[string]any{"name": "t", "version": "1"}},
		}), map[string]string{mcp.HeaderProtocolVersion: v, mcp.HeaderMethod: "tools/call", mcp.HeaderName: "whoami"})
		got := parseCall(t, resp.StatusCode, body)
		if got.isError || got.text != want {
			t.Fatalf("got %+v, want %q", got, want)
		}
	}
}

func TestMetadataAndProbesAreUnauthenticated(t *testing.T) {
	e := newEnv(t, envOpts{})
	c := e.client(t, "")
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		resp, body := c.do(http.MethodGet, path, nil, nil)
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &doc) != nil ||
			doc.Resource != resource || len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != e.issuer.URL {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
	if resp, body := c.do(http.MethodGet, "/healthz", nil, nil); resp.StatusCode != http.StatusOK || body != "ok" {
		t.Errorf("healthz: %d %s", resp.StatusCode, body)
	}
	if resp, body := c.do(http.MethodGet, "/readyz", nil, nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"ready":true`) {
		t.Errorf("readyz: %d %s", resp.StatusCode, body)
	}
}

func TestNoAuthConfigured(t *testing.T) {
	e := newEnv(t, envOpts{noAuth: true})
	c := e.client(t, "")
	if code := c.initialize(); code != http.StatusOK {
		t.Fatalf("initialize without auth configured: %d", code)
	}
	if got := c.call("whoami", nil); got.text != "|"+c.session {
		t.Fatalf("whoami: %+v", got)
	}
	if resp, _ := c.do(http.MethodGet, "/.well-known/oauth-protected-resource", nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("metadata served without authentication configured: %d", resp.StatusCode)
	}
}
