package auth

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
)

// Variable names, for the README and for the settings loader's unknown-variable check.
const (
	VarTokens         = "K8S_SANDBOX_AUTH__TOKENS"
	VarTokensFile     = "K8S_SANDBOX_AUTH__TOKENS_FILE"
	VarOIDCIssuer     = "K8S_SANDBOX_AUTH__OIDC_ISSUER"
	VarOIDCAudience   = "K8S_SANDBOX_AUTH__OIDC_AUDIENCE"
	VarOIDCJWKSURL    = "K8S_SANDBOX_AUTH__OIDC_JWKS_URL"
	VarOIDCClaim      = "K8S_SANDBOX_AUTH__OIDC_PRINCIPAL_CLAIM"
	VarResourceURL    = "K8S_SANDBOX_AUTH__RESOURCE_URL"
	minTokenLen       = 16
	maxPrincipalBytes = 256
)

// Variables lists every variable LoadConfig reads.
func Variables() []string {
	return []string{VarTokens, VarTokensFile, VarOIDCIssuer, VarOIDCAudience, VarOIDCJWKSURL, VarOIDCClaim, VarResourceURL}
}

// Token is one static bearer token. It prints without its secret.
type Token struct {
	Principal string // the name; the token authenticates as Static(Principal)
	Secret    string
}

func (t Token) String() string   { return t.Principal + ":<redacted>" }
func (t Token) GoString() string { return "auth.Token{" + t.String() + "}" }

// OIDCConfig enables JWT access tokens from one issuer. The zero value means off.
type OIDCConfig struct {
	Issuer         string // exact "iss" value; discovery document at Issuer/.well-known/openid-configuration
	Audience       string // must appear in "aud"
	JWKSURL        string // empty: discovered
	PrincipalClaim string // string claim naming the principal
}

// Config is the parsed authentication settings.
type Config struct {
	Tokens      []Token
	OIDC        OIDCConfig
	ResourceURL string // empty: derived from the listen address (see Resource)
}

// Enabled reports whether any authentication is configured.
func (c Config) Enabled() bool { return len(c.Tokens) > 0 || c.OIDC.Issuer != "" }

// Resource is the protected resource URL: the configured one, else http://<listen addr>/mcp.
func (c Config) Resource(listenAddr string) string {
	if c.ResourceURL != "" {
		return c.ResourceURL
	}
	host, port, err := net.SplitHostPort(listenAddr)
	if err != nil {
		return "http://" + listenAddr + "/mcp"
	}
	if host == "" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/mcp"
}

// LoadConfig reads the K8S_SANDBOX_AUTH__* settings from upper-cased variable names. Errors
// name the variable and never contain a token.
func LoadConfig(vars map[string]string) (Config, error) {
	get := func(name string) string { return strings.TrimSpace(vars[name]) }
	var c Config
	seen := map[string]string{}
	add := func(where string, p, secret string) error {
		t, err := newToken(p, secret)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if other, dup := seen[t.Secret]; dup {
			return fmt.Errorf("%s: principal %q reuses the token of principal %q; every token must be unique", where, t.Principal, other)
		}
		seen[t.Secret] = t.Principal
		c.Tokens = append(c.Tokens, t)
		return nil
	}
	if v := get(VarTokens); v != "" {
		for i, entry := range strings.Split(v, ",") {
			if strings.TrimSpace(entry) == "" {
				continue
			}
			p, secret, ok := strings.Cut(entry, ":")
			if !ok {
				return Config{}, fmt.Errorf("%s entry %d must be principal:token", VarTokens, i+1)
			}
			if err := add(fmt.Sprintf("%s entry %d", VarTokens, i+1), p, secret); err != nil {
				return Config{}, err
			}
		}
	}
	if path := get(VarTokensFile); path != "" {
		if err := readTokenFile(path, add); err != nil {
			return Config{}, err
		}
	}

	o := OIDCConfig{Issuer: get(VarOIDCIssuer), Audience: get(VarOIDCAudience), JWKSURL: get(VarOIDCJWKSURL), PrincipalClaim: get(VarOIDCClaim)}
	if o.Issuer == "" {
		for _, name := range []string{VarOIDCAudience, VarOIDCJWKSURL, VarOIDCClaim} {
			if get(name) != "" {
				return Config{}, fmt.Errorf("%s requires %s", name, VarOIDCIssuer)
			}
		}
	} else {
		if err := checkFetchURL(o.Issuer); err != nil {
			return Config{}, fmt.Errorf("%s %w", VarOIDCIssuer, err)
		}
		if o.Audience == "" {
			return Config{}, fmt.Errorf("%s is required with %s (tokens issued for other services must be refused)", VarOIDCAudience, VarOIDCIssuer)
		}
		if o.JWKSURL != "" {
			if err := checkFetchURL(o.JWKSURL); err != nil {
				return Config{}, fmt.Errorf("%s %w", VarOIDCJWKSURL, err)
			}
		}
		if o.PrincipalClaim == "" {
			o.PrincipalClaim = "sub"
		}
		c.OIDC = o
	}

	if r := get(VarResourceURL); r != "" {
		u, err := url.Parse(r)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" || u.RawQuery != "" {
			return Config{}, fmt.Errorf("%s must be an absolute http(s) URL without query or fragment, e.g. https://mcp.example.com/mcp, got %q", VarResourceURL, r)
		}
		c.ResourceURL = r
	}
	return c, nil
}

func readTokenFile(path string, add func(where, p, secret string) error) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s: reading %s: %w", VarTokensFile, path, err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		where := fmt.Sprintf("%s %s line %d", VarTokensFile, path, line)
		p, secret, ok := strings.Cut(text, ":")
		if !ok {
			return fmt.Errorf("%s must be principal:token", where)
		}
		if err := add(where, p, secret); err != nil {
			return err
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: reading %s: %w", VarTokensFile, path, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %s holds no principal:token lines", VarTokensFile, path)
	}
	return nil
}

func newToken(principal, secret string) (Token, error) {
	p, s := strings.TrimSpace(principal), strings.TrimSpace(secret)
	if err := checkPrincipal(p); err != nil {
		return Token{}, err
	}
	if len(s) < minTokenLen {
		return Token{}, fmt.Errorf("the token of principal %q is shorter than %d characters", p, minTokenLen)
	}
	for _, r := range s {
		// Tokens travel in an Authorization header: visible ASCII only.
		if r <= ' ' || r > '~' {
			return Token{}, fmt.Errorf("the token of principal %q contains a space, control or non-ASCII character", p)
		}
	}
	return Token{Principal: p, Secret: s}, nil
}

func checkPrincipal(p string) error {
	if p == "" {
		return fmt.Errorf("the principal is empty")
	}
	if len(p) > maxPrincipalBytes {
		return fmt.Errorf("the principal is longer than %d bytes", maxPrincipalBytes)
	}
	for _, r := range p {
		if r < ' ' || r == 0x7f {
			return fmt.Errorf("the principal contains a control character")
		}
	}
	return nil
}

// checkFetchURL accepts https, and http only on loopback: keys fetched in the clear could
// be swapped by anyone on the path, which would let them mint tokens.
func checkFetchURL(raw string) error {
	u, err := url.Parse(raw)
	// No "#" at all (not even an empty fragment): Principal.String relies on it.
	if err != nil || u.Host == "" || strings.Contains(raw, "#") || u.RawQuery != "" {
		return fmt.Errorf("must be an absolute https URL without query or fragment, got %q", raw)
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
		return nil
	}
	return fmt.Errorf("must be an https URL (http only for localhost), got %q", raw)
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
