//go:build e2e

package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth/authtest"
	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/owner"
)

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func authSession(t *testing.T, base, token, version string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}
	cs, err := newClient().Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// TestAuthenticatedTenants runs the binary with two bearer-token principals and a namespace
// allowlist: each principal sees only its own sandboxes in both protocol eras, unknown
// tokens are refused with 401, and namespaces outside the list are refused.
func TestAuthenticatedTenants(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	const aliceToken, bobToken = "alice-token-0123456789", "bob-token-0123456789ab"
	env := append(append([]string{}, connections()[4].env...),
		"K8S_SANDBOX_AUTH__TOKENS=alice:"+aliceToken+",bob:"+bobToken,
		"K8S_SANDBOX_ALLOWED_NAMESPACES="+ns.Name, "K8S_SANDBOX_MAX_SANDBOXES_PER_OWNER=1")
	base := httpServer(t, env)

	for _, token := range []string{"", "wrong-token-0123456789"} {
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
			t.Errorf("token %q: %d %q %s", token, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
		if token != "" && strings.Contains(string(body), token) {
			t.Error("the 401 body echoes the token")
		}
	}
	if _, err := authSession(t, base, "nope-nope-nope-nope", ""); err == nil {
		t.Error("a client with a wrong token connected")
	}

	for _, era := range []string{"", "2025-11-25"} {
		t.Run("era"+era, func(t *testing.T) {
			alice, err := authSession(t, base, aliceToken, era)
			if err != nil {
				t.Fatal(err)
			}
			bob, err := authSession(t, base, bobToken, era)
			if err != nil {
				t.Fatal(err)
			}
			created := call[createResult](t, alice, "create_sandbox", map[string]any{"warmpool": "sandboxd-pool", "namespace": ns.Name})
			claim := map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name}
			for _, tool := range []string{"get_sandbox_status", "delete_sandbox"} {
				if msg := callError(t, bob, tool, claim); !strings.Contains(msg, "not found") {
					t.Errorf("bob %s: %s", tool, msg)
				}
			}
			if got := readSandboxes(t, bob, ns.Name); len(got) != 0 {
				t.Errorf("bob sees %v", got)
			}
			if msg := callError(t, alice, "create_sandbox", map[string]any{"warmpool": "sandboxd-pool", "namespace": ns.Name}); !strings.Contains(msg, "live sandboxes") {
				t.Errorf("per-owner cap: %s", msg)
			}
			if msg := callError(t, alice, "create_sandbox", map[string]any{"warmpool": "sandboxd-pool", "namespace": "default"}); !strings.Contains(msg, "not allowed") {
				t.Errorf("namespace outside the allowlist: %s", msg)
			}
			if st := call[statusResult](t, alice, "get_sandbox_status", claim); !st.Ready {
				t.Errorf("alice's sandbox after bob's attempts: %+v", st)
			}
			call[struct{}](t, alice, "delete_sandbox", claim)
		})
	}
}

// TestAuthSourcesDoNotCollide (issue 14 point 4) runs the binary with a static token for
// "alice" and an OIDC issuer (a fake one on loopback): a validly signed JWT with sub "alice"
// is another principal. In both protocol eras it can neither see nor touch the static
// alice's sandbox, and sessionless owners are the hashes of the source-qualified principals.
func TestAuthSourcesDoNotCollide(t *testing.T) {
	t.Parallel()
	ns := stack.Namespace(t)
	const aliceToken, audience = "alice-token-0123456789", "k8s-sandbox-mcp-e2e"
	is := authtest.NewIssuer(t, audience)
	env := append(append([]string{}, connections()[4].env...),
		"K8S_SANDBOX_AUTH__TOKENS=alice:"+aliceToken,
		"K8S_SANDBOX_AUTH__OIDC_ISSUER="+is.URL, "K8S_SANDBOX_AUTH__OIDC_AUDIENCE="+audience,
		"K8S_SANDBOX_ALLOWED_NAMESPACES="+ns.Name)
	base := httpServer(t, env)
	jwt := is.Sign(t, "RS256", is.Claims("alice"))
	ownerLabel := func(name string) string {
		c, err := stack.Extensions.ExtensionsV1beta1().SandboxClaims(ns.Name).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Labels["mcp.k8s-agent-sandbox/session-id"]
	}

	for _, era := range []string{"", "2025-11-25"} {
		t.Run("era"+era, func(t *testing.T) {
			static, err := authSession(t, base, aliceToken, era)
			if err != nil {
				t.Fatal(err)
			}
			oidcAlice, err := authSession(t, base, jwt, era)
			if err != nil {
				t.Fatalf("the JWT was refused: %v", err)
			}
			created := call[createResult](t, static, "create_sandbox", map[string]any{"warmpool": "sandboxd-pool", "namespace": ns.Name})
			claim := map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name}
			exec := map[string]any{"sandbox_claim_name": created.SandboxClaimName, "namespace": ns.Name, "command": "true"}
			for tool, args := range map[string]map[string]any{"get_sandbox_status": claim, "execute_command": exec, "delete_sandbox": claim} {
				if msg := callError(t, oidcAlice, tool, args); !strings.Contains(msg, "not found") {
					t.Errorf("OIDC alice %s on static alice's sandbox: %s", tool, msg)
				}
			}
			if got := readSandboxes(t, oidcAlice, ns.Name); len(got) != 0 {
				t.Errorf("OIDC alice sees %v", got)
			}
			if era == "" {
				if got, want := ownerLabel(created.SandboxClaimName), owner.ForPrincipal(auth.Static("alice")); got != want {
					t.Errorf("static alice's sessionless owner %q, want %q", got, want)
				}
				mine := call[createResult](t, oidcAlice, "create_sandbox", map[string]any{"warmpool": "sandboxd-pool", "namespace": ns.Name})
				if got, want := ownerLabel(mine.SandboxClaimName), owner.ForPrincipal(auth.OIDC(is.URL, "alice")); got != want {
					t.Errorf("OIDC alice's sessionless owner %q, want %q", got, want)
				}
				if got := readSandboxes(t, static, ns.Name); len(got) != 1 || !strings.Contains(got[0], created.SandboxClaimName) {
					t.Errorf("static alice sees %v, want only her %s", got, created.SandboxClaimName)
				}
				call[struct{}](t, oidcAlice, "delete_sandbox", map[string]any{"sandbox_claim_name": mine.SandboxClaimName, "namespace": ns.Name})
			}
			if st := call[statusResult](t, static, "get_sandbox_status", claim); !st.Ready {
				t.Errorf("static alice's sandbox after OIDC alice's attempts: %+v", st)
			}
			call[struct{}](t, static, "delete_sandbox", claim)
		})
	}
}
