package auth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	_ "crypto/sha256" // registers SHA-256 for crypto.Hash.New
	_ "crypto/sha512" // registers SHA-384 and SHA-512
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"
)

const (
	maxTokenBytes = 16 << 10
	leeway        = 30 * time.Second
)

type algSpec struct {
	hash crypto.Hash
	kind string // rsa, pss, ec, ed
	size int    // ECDSA coordinate size in bytes
}

// algorithm returns the accepted signature algorithms. "none" and the HMAC family are absent
// on purpose: HMAC keyed with the issuer's public key is the classic forgery.
func algorithm(name string) (algSpec, bool) {
	switch name {
	case "RS256", "PS256", "ES256":
		return algSpec{crypto.SHA256, kindOf(name), 32}, true
	case "RS384", "PS384", "ES384":
		return algSpec{crypto.SHA384, kindOf(name), 48}, true
	case "RS512", "PS512", "ES512":
		return algSpec{crypto.SHA512, kindOf(name), 66}, true
	case "EdDSA":
		return algSpec{kind: "ed"}, true
	}
	return algSpec{}, false
}

func kindOf(name string) string {
	return map[byte]string{'R': "rsa", 'P': "pss", 'E': "ec"}[name[0]]
}

// keyFits reports whether key can verify alg (including the curve for ECDSA).
func keyFits(key crypto.PublicKey, alg string) bool {
	a, ok := algorithm(alg)
	if !ok {
		return false
	}
	switch k := key.(type) {
	case *rsa.PublicKey:
		return a.kind == "rsa" || a.kind == "pss"
	case *ecdsa.PublicKey:
		return a.kind == "ec" && (k.Curve.Params().BitSize+7)/8 == a.size
	case ed25519.PublicKey:
		return a.kind == "ed"
	}
	return false
}

type oidcVerifier struct {
	issuer, audience, claim string
	keys                    *keySet
	now                     func() time.Time
}

// verify checks signature, iss, aud, exp, nbf and iat, and returns the principal claim.
func (v *oidcVerifier) verify(ctx context.Context, token string) (Principal, error) {
	if len(token) > maxTokenBytes {
		return "", errors.New("token too large")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", errors.New("not a JWS compact token")
	}
	var hdr struct {
		Alg  string          `json:"alg"`
		Kid  string          `json:"kid"`
		Crit json.RawMessage `json:"crit"`
	}
	if err := decodeSegment(parts[0], &hdr); err != nil {
		return "", fmt.Errorf("header: %w", err)
	}
	a, ok := algorithm(hdr.Alg)
	if !ok {
		return "", fmt.Errorf("algorithm %q not accepted", hdr.Alg)
	}
	if len(hdr.Crit) > 0 {
		return "", errors.New("critical header extensions not supported")
	}
	sig, err := b64(parts[2])
	if err != nil {
		return "", fmt.Errorf("signature encoding: %w", err)
	}
	keys, err := v.keys.candidates(ctx, hdr.Kid, hdr.Alg)
	if err != nil {
		return "", err
	}
	signed := []byte(parts[0] + "." + parts[1])
	if !slices.ContainsFunc(keys, func(k crypto.PublicKey) bool { return verifySig(k, a.kind, a.hash, a.size, signed, sig) }) {
		return "", errors.New("bad signature")
	}
	var claims map[string]any
	if err := decodeSegment(parts[1], &claims); err != nil {
		return "", fmt.Errorf("claims: %w", err)
	}
	return v.checkClaims(claims)
}

func (v *oidcVerifier) checkClaims(c map[string]any) (Principal, error) {
	if iss, _ := c["iss"].(string); iss != v.issuer {
		return "", fmt.Errorf("issuer %q is not %q", iss, v.issuer)
	}
	if !audienceHas(c["aud"], v.audience) {
		return "", fmt.Errorf("audience does not include %q", v.audience)
	}
	now := v.now()
	exp, ok, err := numericDate(c, "exp")
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "", errors.New("no exp claim")
	case !now.Before(exp.Add(leeway)):
		return "", fmt.Errorf("expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if nbf, ok, err := numericDate(c, "nbf"); err != nil || (ok && now.Add(leeway).Before(nbf)) {
		return "", errors.Join(err, errors.New("not valid yet (nbf)"))
	}
	if iat, ok, err := numericDate(c, "iat"); err != nil || (ok && now.Add(leeway).Before(iat)) {
		return "", errors.Join(err, errors.New("issued in the future (iat)"))
	}
	p, _ := c[v.claim].(string)
	if err := checkPrincipal(p); err != nil {
		return "", fmt.Errorf("claim %q: %w", v.claim, err)
	}
	return Principal(p), nil
}

func audienceHas(aud any, want string) bool {
	switch a := aud.(type) {
	case string:
		return a == want
	case []any:
		return slices.ContainsFunc(a, func(x any) bool { s, _ := x.(string); return s == want })
	}
	return false
}

func numericDate(c map[string]any, name string) (time.Time, bool, error) {
	raw, ok := c[name]
	if !ok {
		return time.Time{}, false, nil
	}
	n, ok := raw.(json.Number)
	if !ok {
		return time.Time{}, false, fmt.Errorf("claim %s is not a number", name)
	}
	f, err := n.Float64()
	if err != nil || f < 0 || f > 1e11 {
		return time.Time{}, false, fmt.Errorf("claim %s is not a valid NumericDate", name)
	}
	sec := math.Floor(f)
	return time.Unix(int64(sec), int64((f-sec)*1e9)), true, nil
}

func decodeSegment(seg string, v any) error {
	raw, err := b64(seg)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	return d.Decode(v)
}

func verifySig(key crypto.PublicKey, kind string, h crypto.Hash, size int, signed, sig []byte) bool {
	if kind == "ed" {
		k, ok := key.(ed25519.PublicKey)
		return ok && ed25519.Verify(k, signed, sig)
	}
	hh := h.New()
	hh.Write(signed)
	digest := hh.Sum(nil)
	switch k := key.(type) {
	case *rsa.PublicKey:
		if kind == "pss" {
			return rsa.VerifyPSS(k, h, digest, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
		}
		return kind == "rsa" && rsa.VerifyPKCS1v15(k, h, digest, sig) == nil
	case *ecdsa.PublicKey:
		// JWS carries r||s, fixed width, not ASN.1.
		if kind != "ec" || len(sig) != 2*size {
			return false
		}
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		return ecdsa.Verify(k, digest, r, s)
	}
	return false
}
