package serve

import (
	"net/http"
	"strings"
	"testing"
)

// Issue 14 point 4: an OIDC token whose sub is "alice" is not the static principal "alice".
// It must neither use nor end the session the static alice opened.
func TestSessionNotSharedAcrossPrincipalSources(t *testing.T) {
	e := newEnv(t, envOpts{})
	static := e.client(t, tokAlice)
	if code := static.initialize(); code != http.StatusOK {
		t.Fatalf("initialize: %d", code)
	}
	oidcAlice := e.client(t, e.issuer.Sign(t, "RS256", e.issuer.Claims("alice")))
	oidcAlice.session = static.session

	if got := oidcAlice.call("whoami", nil); got.status != http.StatusNotFound || strings.Contains(got.body, static.session) {
		t.Errorf("OIDC alice calling in static alice's session: %+v", got)
	}
	for _, method := range []string{http.MethodDelete, http.MethodGet} {
		resp, body := oidcAlice.do(method, "/mcp", nil, nil)
		if resp.StatusCode != http.StatusNotFound || strings.TrimSpace(body) != `{"error":"session not found"}` {
			t.Errorf("OIDC alice %s static alice's session: %d %s", method, resp.StatusCode, body)
		}
	}
	if e.wasUnregistered(static.session) {
		t.Fatal("OIDC alice's DELETE ended static alice's session")
	}
	if got := static.call("whoami", nil); got.text != "alice|"+static.session {
		t.Fatalf("static alice after the OIDC alice's attempts: %+v", got)
	}

	// And the other way round: OIDC alice's own session is hers alone.
	own := e.client(t, oidcAlice.token)
	if code := own.initialize(); code != http.StatusOK {
		t.Fatalf("OIDC initialize: %d", code)
	}
	if got := own.call("whoami", nil); got.text != "alice|"+own.session {
		t.Fatalf("OIDC alice in her own session: %+v", got)
	}
	static.session = own.session
	if got := static.call("whoami", nil); got.status != http.StatusNotFound {
		t.Errorf("static alice calling in OIDC alice's session: %+v", got)
	}
}
