package auth

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	tokA = "alice-token-0123456789"
	tokB = "bob-token-abcdefghijkl"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "# team tokens\n\ncarol:carol-token-0123456789\n  dave : dave-token-0123456789  \n")
	bad := write("bad", "# ok\ncarol carol-token-0123456789\n")
	empty := write("empty", "# nothing here\n\n")
	dupe := write("dupe", "carol:"+tokA+"\n")

	tests := []struct {
		name    string
		vars    map[string]string
		wantErr string // substring; the error must also never contain a token
		want    func(t *testing.T, c Config)
	}{
		{name: "nothing", vars: map[string]string{}, want: func(t *testing.T, c Config) {
			if c.Enabled() {
				t.Error("empty config is enabled")
			}
		}},
		{name: "env tokens", vars: map[string]string{VarTokens: "alice:" + tokA + ", bob:" + tokB + ","}, want: func(t *testing.T, c Config) {
			if !c.Enabled() || len(c.Tokens) != 2 || c.Tokens[0] != (Token{"alice", tokA}) || c.Tokens[1] != (Token{"bob", tokB}) {
				t.Errorf("tokens: %#v", c.Tokens)
			}
		}},
		{name: "env and file", vars: map[string]string{VarTokens: "alice:" + tokA, VarTokensFile: good}, want: func(t *testing.T, c Config) {
			var got []string
			for _, tk := range c.Tokens {
				got = append(got, string(tk.Principal))
			}
			if strings.Join(got, ",") != "alice,carol,dave" || c.Tokens[2].Secret != "dave-token-0123456789" {
				t.Errorf("principals %v", got)
			}
		}},
		{name: "short token", vars: map[string]string{VarTokens: "alice:short-secret"}, wantErr: VarTokens + " entry 1: the token of principal \"alice\" is shorter than 16"},
		{name: "no colon", vars: map[string]string{VarTokens: "alice:" + tokA + "," + tokB}, wantErr: VarTokens + " entry 2 must be principal:token"},
		{name: "empty principal", vars: map[string]string{VarTokens: " :" + tokA}, wantErr: "the principal is empty"},
		{name: "token with space", vars: map[string]string{VarTokens: "alice:abcdefgh ijklmnopq"}, wantErr: "contains a space"},
		{name: "duplicate token", vars: map[string]string{VarTokens: "alice:" + tokA + ",bob:" + tokA}, wantErr: "principal \"bob\" reuses the token of principal \"alice\""},
		{name: "duplicate across env and file", vars: map[string]string{VarTokens: "alice:" + tokA, VarTokensFile: dupe}, wantErr: VarTokensFile + " " + dupe + " line 1: principal \"carol\" reuses"},
		{name: "bad file line", vars: map[string]string{VarTokensFile: bad}, wantErr: VarTokensFile + " " + bad + " line 2 must be principal:token"},
		{name: "empty file", vars: map[string]string{VarTokensFile: empty}, wantErr: "holds no principal:token lines"},
		{name: "missing file", vars: map[string]string{VarTokensFile: filepath.Join(dir, "nope")}, wantErr: VarTokensFile + ": reading"},
		{name: "oidc", vars: map[string]string{VarOIDCIssuer: "https://idp.example.com/realms/x", VarOIDCAudience: "https://mcp.example.com/mcp"}, want: func(t *testing.T, c Config) {
			want := OIDCConfig{Issuer: "https://idp.example.com/realms/x", Audience: "https://mcp.example.com/mcp", PrincipalClaim: "sub"}
			if !c.Enabled() || c.OIDC != want {
				t.Errorf("oidc %+v", c.OIDC)
			}
		}},
		{name: "oidc needs audience", vars: map[string]string{VarOIDCIssuer: "https://idp.example.com"}, wantErr: VarOIDCAudience + " is required"},
		{name: "audience needs issuer", vars: map[string]string{VarOIDCAudience: "x"}, wantErr: VarOIDCAudience + " requires " + VarOIDCIssuer},
		{name: "claim needs issuer", vars: map[string]string{VarOIDCClaim: "email"}, wantErr: VarOIDCClaim + " requires"},
		{name: "plain http issuer", vars: map[string]string{VarOIDCIssuer: "http://idp.example.com", VarOIDCAudience: "a"}, wantErr: VarOIDCIssuer + " must be an https URL"},
		{name: "loopback http issuer", vars: map[string]string{VarOIDCIssuer: "http://127.0.0.1:5556", VarOIDCAudience: "a", VarOIDCClaim: "email"}, want: func(t *testing.T, c Config) {
			if c.OIDC.PrincipalClaim != "email" {
				t.Errorf("claim %q", c.OIDC.PrincipalClaim)
			}
		}},
		{name: "issuer with an empty fragment", vars: map[string]string{VarOIDCIssuer: "https://idp.example.com#", VarOIDCAudience: "a"}, wantErr: VarOIDCIssuer + " must be an absolute https URL without query or fragment"},
		{name: "plain http jwks", vars: map[string]string{VarOIDCIssuer: "https://idp", VarOIDCAudience: "a", VarOIDCJWKSURL: "http://idp/keys"}, wantErr: VarOIDCJWKSURL + " must be an https URL"},
		{name: "resource url", vars: map[string]string{VarResourceURL: "https://mcp.example.com/mcp"}, want: func(t *testing.T, c Config) {
			if c.Resource("0.0.0.0:8000") != "https://mcp.example.com/mcp" || c.Enabled() {
				t.Errorf("resource %q", c.Resource("0.0.0.0:8000"))
			}
		}},
		{name: "bad resource url", vars: map[string]string{VarResourceURL: "mcp.example.com/mcp"}, wantErr: VarResourceURL + " must be an absolute"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadConfig(tc.vars)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				for _, secret := range []string{tokA, tokB, "short-secret", "carol-token-0123456789"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error leaks a token: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want(t, c)
		})
	}
}

func TestTokensPrintRedacted(t *testing.T) {
	c, err := LoadConfig(map[string]string{VarTokens: "alice:" + tokA})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(f, c); strings.Contains(out, tokA) || !strings.Contains(out, "alice") {
			t.Errorf("%s prints %s", f, out)
		}
	}
}

func TestDefaultResource(t *testing.T) {
	tests := map[string]string{
		"127.0.0.1:8000": "http://127.0.0.1:8000/mcp",
		":8000":          "http://localhost:8000/mcp",
		"[::1]:9":        "http://[::1]:9/mcp",
		"0.0.0.0:80":     "http://0.0.0.0:80/mcp",
	}
	for addr, want := range tests {
		if got := (Config{}).Resource(addr); got != want {
			t.Errorf("Resource(%q) = %q, want %q", addr, got, want)
		}
	}
}
