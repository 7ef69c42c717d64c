package auth

import (
	"context"
	"testing"
)

func TestPrincipalForm(t *testing.T) {
	tests := []struct {
		p    Principal
		want string
	}{
		{Static("alice"), "static:alice"},
		{OIDC("https://idp.example.com", "alice"), "oidc:https://idp.example.com#alice"},
		{OIDC("https://idp.example.com", "a#b"), "oidc:https://idp.example.com#a#b"},
		{Principal{}, ""},
	}
	for _, tc := range tests {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
	if Static("alice") == OIDC("", "alice") || Static("alice") == OIDC("static", "alice") {
		t.Error("principals of different sources compare equal")
	}
	if _, ok := PrincipalFrom(WithPrincipal(context.Background(), Static(""))); ok {
		t.Error("an empty principal counts as authenticated")
	}
}
