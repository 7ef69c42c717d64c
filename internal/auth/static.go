package auth

import (
	"crypto/sha256"
	"crypto/subtle"
)

// staticTokens matches a presented token against every configured token. Digests make the
// comparisons equal-length, and every token is compared with no early exit, so the time taken
// reveals neither a token's prefix nor which token matched.
type staticTokens struct {
	digests    [][sha256.Size]byte
	principals []Principal
}

func newStaticTokens(tokens []Token) staticTokens {
	var s staticTokens
	for _, t := range tokens {
		s.digests = append(s.digests, sha256.Sum256([]byte(t.Secret)))
		s.principals = append(s.principals, Static(t.Principal))
	}
	return s
}

func (s staticTokens) lookup(token string) (Principal, bool) {
	d := sha256.Sum256([]byte(token))
	found, idx := 0, 0
	for i := range s.digests {
		eq := subtle.ConstantTimeCompare(d[:], s.digests[i][:])
		idx = subtle.ConstantTimeSelect(eq, i, idx)
		found |= eq
	}
	if found == 0 {
		return Principal{}, false
	}
	return s.principals[idx], true
}
