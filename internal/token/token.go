// Package token mints the random tokens that URLs handed out by this server carry
// (expose_port, create_transfer_url) and the hashes recorded on the claims in their place:
// whoever can read a claim learns no usable URL, and every replica can check one.
package token

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// New returns n random bytes, base64url without padding (safe in a path segment).
func New(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading random bytes for a token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Hash is what is recorded of a token: its SHA-256, in hex.
func Hash(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}
