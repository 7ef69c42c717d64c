//go:build e2e

package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
