package owner

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/k8s-sandbox-mcp/k8s-sandbox-mcp/internal/auth"
)

// Issue 14 point 4: the static principal "alice" and an OIDC token with sub "alice" are
// different owners, and every owner id is a valid label value whatever the name holds.
func TestPrincipalOwnersKeepSourcesApart(t *testing.T) {
	const issuer = "https://idp.example.com/realms/x"
	principals := []auth.Principal{
		auth.Static("alice"),
		auth.OIDC(issuer, "alice"),
		auth.OIDC(issuer+"2", "alice"),
		auth.Static("bob"),
		auth.OIDC(issuer, "bob"),
		auth.OIDC(issuer, "alice@example.com"),
		auth.Static("p-alice"),
		auth.OIDC(issuer, strings.Repeat("long name with spaces and ü ", 9)),
	}
	o := New("")
	seen := map[string]auth.Principal{}
	for _, p := range principals {
		id, err := o.HTTP(auth.WithPrincipal(context.Background(), p))
		if err != nil {
			t.Fatal(err)
		}
		if id != ForPrincipal(p) {
			t.Errorf("HTTP(%s) = %q, ForPrincipal = %q", p, id, ForPrincipal(p))
		}
		if errs := validation.IsValidLabelValue(id); len(errs) > 0 || !strings.HasPrefix(id, "p-") {
			t.Errorf("owner of %s is %q: %v", p, id, errs)
		}
		if other, dup := seen[id]; dup {
			t.Errorf("%s and %s share the owner %q", p, other, id)
		}
		seen[id] = p
	}
	if ForPrincipal(auth.Static("alice")) != ForPrincipal(auth.Static("alice")) {
		t.Error("ForPrincipal is not stable")
	}
}

func TestHTTPWithoutPrincipal(t *testing.T) {
	o := New("")
	if id, _ := o.HTTP(context.Background()); id != Anonymous {
		t.Errorf("no session, no principal: %q", id)
	}
	if id, _ := o.HTTP(auth.WithPrincipal(context.Background(), auth.Static(""))); id != Anonymous {
		t.Errorf("empty principal: %q", id)
	}
}
