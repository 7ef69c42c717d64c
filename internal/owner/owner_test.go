package owner

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
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

type session struct{ id string }

func (s session) SessionID() string                                 { return s.id }
func (session) NotificationChannel() chan<- mcp.JSONRPCNotification { return nil }
func (session) Initialize()                                         {}
func (session) Initialized() bool                                   { return true }

// Issue 30 point 3: with authentication the principal owns the sandboxes whatever session
// (or none) the call came in, so no session end releases them; an anonymous session keeps
// owning its own, and its end releases them.
func TestWhoOwnsAnHTTPSandbox(t *testing.T) {
	alice := auth.Static("alice")
	inSession := func(ctx context.Context, id string) context.Context {
		return (&server.MCPServer{}).WithContext(ctx, session{id})
	}
	tests := []struct {
		name      string
		ctx       context.Context
		want      string
		forgotten bool // Forget of the session returns the owner, so its end releases it
	}{
		{"principal in a session", inSession(auth.WithPrincipal(context.Background(), alice), "s-1"), ForPrincipal(alice), false},
		{"principal without session", auth.WithPrincipal(context.Background(), alice), ForPrincipal(alice), false},
		{"anonymous session", inSession(context.Background(), "s-2"), "s-2", true},
		{"anonymous session with an unusable id", inSession(context.Background(), "s 3/x"), LabelValue("s 3/x"), true},
		{"anonymous without session", context.Background(), Anonymous, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := New("")
			got, err := o.HTTP(tt.ctx)
			if err != nil || got != tt.want {
				t.Fatalf("HTTP = %q, %v; want %q", got, err, tt.want)
			}
			s := server.ClientSessionFromContext(tt.ctx)
			if s == nil {
				return
			}
			id, ok := o.Forget(s.SessionID())
			if ok != tt.forgotten || (ok && id != tt.want) {
				t.Errorf("Forget = %q, %v; want release %v of %q", id, ok, tt.forgotten, tt.want)
			}
		})
	}
}

// SessionOwner, which routes what concerns an owner to its HTTP sessions, is the owner HTTP
// gives their calls.
func TestSessionOwnerIsHTTPsOwner(t *testing.T) {
	alice := auth.WithPrincipal(context.Background(), auth.Static("alice"))
	cases := []struct {
		name    string
		ctx     context.Context
		session string
		want    string
	}{
		{"principal", alice, "s1", ForPrincipal(auth.Static("alice"))},
		{"anonymous session", context.Background(), "s1", LabelValue("s1")},
		{"neither", context.Background(), "", Anonymous},
	}
	for _, tc := range cases {
		if got := SessionOwner(tc.ctx, tc.session); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
