package auth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMiddleware(t *testing.T) {
	a, err := New(Config{Tokens: []Token{{"alice", tokA}}}, Options{ListenAddr: "127.0.0.1:8000"})
	if err != nil {
		t.Fatal(err)
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		_, _ = w.Write([]byte(p.String() + "|" + r.Header.Get("Authorization")))
	})
	const meta = `resource_metadata="http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"`
	tests := []struct {
		name      string
		headers   []string
		code      int
		challenge string // exact WWW-Authenticate
		body      string
	}{
		{"no header", nil, 401, "Bearer " + meta, `{"error":"missing or malformed bearer token"}`},
		{"basic auth", []string{"Basic YWxpY2U6cHc="}, 401, `Bearer error="invalid_token", ` + meta, `{"error":"missing or malformed bearer token"}`},
		{"empty bearer", []string{"Bearer "}, 401, `Bearer error="invalid_token", ` + meta, `{"error":"missing or malformed bearer token"}`},
		{"two headers", []string{"Bearer " + tokA, "Bearer " + tokA}, 401, `Bearer error="invalid_token", ` + meta, `{"error":"missing or malformed bearer token"}`},
		{"wrong token", []string{"Bearer wrong-token-0123456789"}, 401, `Bearer error="invalid_token", ` + meta, `{"error":"invalid token"}`},
		{"good token", []string{"Bearer " + tokA}, 200, "", "static:alice|"},
		{"scheme case-insensitive", []string{"bearer " + tokA}, 200, "", "static:alice|"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			for _, h := range tc.headers {
				r.Header.Add("Authorization", h)
			}
			w := httptest.NewRecorder()
			a.Middleware(next).ServeHTTP(w, r)
			body := strings.TrimSpace(w.Body.String())
			if w.Code != tc.code || w.Header().Get("WWW-Authenticate") != tc.challenge || body != tc.body {
				t.Fatalf("got %d %q %q, want %d %q %q", w.Code, w.Header().Get("WWW-Authenticate"), body, tc.code, tc.challenge, tc.body)
			}
			if r.Header.Get("Authorization") == "" && len(tc.headers) > 0 {
				t.Error("middleware changed the caller's request headers")
			}
		})
	}
}

func TestMetadata(t *testing.T) {
	a, err := New(Config{Tokens: []Token{{"alice", tokA}}, OIDC: OIDCConfig{Issuer: "https://idp.example.com", Audience: audience, PrincipalClaim: "sub"}, ResourceURL: audience}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.MetadataURL() != "https://mcp.example.com/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("metadata URL %q", a.MetadataURL())
	}
	mux := http.NewServeMux()
	a.Register(mux)
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			BearerMethods        []string `json:"bearer_methods_supported"`
		}
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &doc) != nil {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
		if doc.Resource != audience || len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != "https://idp.example.com" || doc.BearerMethods[0] != "header" {
			t.Errorf("%s: %+v", path, doc)
		}
	}
}
