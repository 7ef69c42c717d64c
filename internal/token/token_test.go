package token

import (
	"encoding/base64"
	"testing"
)

func TestNewAndHash(t *testing.T) {
	for _, n := range []int{24, 32} {
		a, err := New(n)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(n)
		raw, err := base64.RawURLEncoding.DecodeString(a)
		if err != nil || len(raw) != n || a == b {
			t.Errorf("New(%d) = %q, %q: want two different base64url strings of %d bytes (%v)", n, a, b, n, err)
		}
		if h := Hash(a); len(h) != 64 || h == Hash(b) || h != Hash(a) {
			t.Errorf("Hash(%q) = %q: want a stable 64-hex-digit SHA-256", a, h)
		}
	}
}
