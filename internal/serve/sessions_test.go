package serve

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// A session ID is bound to the principal that opened it: another principal presenting it is
// told the session does not exist, and above all cannot end it (which runs the owner's cleanup).
func TestSessionBoundToPrincipal(t *testing.T) {
	e := newEnv(t, envOpts{})
	alice := e.client(t, tokAlice)
	if code := alice.initialize(); code != http.StatusOK {
		t.Fatalf("initialize: %d", code)
	}
	bob := e.client(t, tokBob)
	bob.session = alice.session

	got := bob.call("whoami", nil)
	if got.status != http.StatusNotFound || strings.Contains(got.body, "alice") {
		t.Errorf("bob calling in alice's session: %+v", got)
	}
	for _, method := range []string{http.MethodDelete, http.MethodGet} {
		resp, body := bob.do(method, "/mcp", nil, nil)
		if resp.StatusCode != http.StatusNotFound || strings.TrimSpace(body) != `{"error":"session not found"}` {
			t.Errorf("bob %s alice's session: %d %s", method, resp.StatusCode, body)
		}
	}
	if e.wasUnregistered(alice.session) {
		t.Fatal("bob's DELETE ended alice's session")
	}
	if got := alice.call("whoami", nil); got.text != "alice|"+alice.session {
		t.Fatalf("alice after bob's attempts: %+v", got)
	}

	// A GET must not mint a session under an ID the client chose.
	mallory := e.client(t, tokBob)
	mallory.session = "mcp-session-00000000-0000-0000-0000-000000000000"
	if resp, _ := mallory.do(http.MethodGet, "/mcp", nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET with a made-up session ID: %d", resp.StatusCode)
	}

	// A POST in a session this process never held (another replica's, or one from before a
	// restart) is told to start a new one.
	if got := mallory.call("whoami", nil); got.status != http.StatusNotFound || !strings.Contains(got.body, "Start a new session with initialize") {
		t.Errorf("call in an unknown session: %+v", got)
	}

	// The owner can end it; then it is gone for everyone.
	if resp, body := alice.do(http.MethodDelete, "/mcp", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("alice DELETE: %d %s", resp.StatusCode, body)
	}
	if !e.wasUnregistered(alice.session) {
		t.Error("alice's DELETE did not end her session")
	}
	if got := alice.call("whoami", nil); got.status != http.StatusNotFound {
		t.Errorf("call after DELETE: %+v", got)
	}
}

func (e *env) wasUnregistered(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Contains(e.unregistered, id)
}
