package agent

// DPoP proofs (RFC 9449) with the agent's Ed25519 identity key. Every agent
// request to the Engine carries one in the DPoP header; docs/api.md "Device
// authentication: DPoP" describes the format and the Engine's checks.

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// DPoPProofType is the JOSE typ of a DPoP proof (RFC 9449 section 4.2).
const DPoPProofType = "dpop+jwt"

// ProofClaims are a DPoP proof's claims. The Engine decodes proofs into the
// same struct, so the two sides cannot disagree on claim names.
type ProofClaims struct {
	HTM string `json:"htm"`
	HTU string `json:"htu"`
	// ATH is the base64url SHA-256 of the access token; empty (omitted)
	// when the request carries no access token.
	ATH string `json:"ath,omitempty"`
	// RegisteredClaims carries jti (ID) and iat (IssuedAt).
	jwt.RegisteredClaims
}

// NewProof returns a DPoP proof JWT for one request: header typ dpop+jwt,
// alg EdDSA and the public key as an OKP jwk; claims jti (128 random bits),
// htm, htu (url without query and fragment), iat and, when accessToken is
// not empty, ath.
func NewProof(key ed25519.PrivateKey, method, rawURL string, accessToken string, now time.Time) (string, error) {
	if len(key) != ed25519.PrivateKeySize {
		return "", errors.New("agent: DPoP proof needs an Ed25519 private key")
	}
	if method == "" {
		return "", errors.New("agent: DPoP proof needs the request method")
	}
	htu, err := ProofURL(rawURL)
	if err != nil {
		return "", err
	}
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", err
	}
	claims := ProofClaims{
		HTM: method,
		HTU: htu,
		RegisteredClaims: jwt.RegisteredClaims{
			ID:       base64.RawURLEncoding.EncodeToString(jti),
			IssuedAt: jwt.NewNumericDate(now),
		},
	}
	if accessToken != "" {
		claims.ATH = AccessTokenHash(accessToken)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	tok.Header["typ"] = DPoPProofType
	tok.Header["jwk"] = PublicJWK(key.Public().(ed25519.PublicKey))
	return tok.SignedString(key)
}

// ProofURL returns the htu for a request URL: scheme, host and path, without
// query and fragment (RFC 9449 section 4.2).
func ProofURL(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("agent: DPoP proof URL: %w", err)
	}
	if u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("agent: DPoP proof URL %q is not absolute", rawURL)
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	u.User = nil
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	return u.String(), nil
}

// AccessTokenHash is the ath value: base64url (no padding) SHA-256 of the
// ASCII access token.
func AccessTokenHash(accessToken string) string {
	sum := sha256.Sum256([]byte(accessToken))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// PublicJWK is the public key as a JWK (RFC 8037): kty OKP, crv Ed25519, x.
func PublicJWK(pub ed25519.PublicKey) map[string]string {
	return map[string]string{"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(pub)}
}

// Thumbprint is the RFC 7638 JWK thumbprint of pub: base64url SHA-256 of
// the canonical JWK {"crv":"Ed25519","kty":"OKP","x":"..."} (required
// members only, sorted, no whitespace). Access tokens carry it as cnf.jkt.
func Thumbprint(pub ed25519.PublicKey) string {
	canonical := `{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`
	sum := sha256.Sum256([]byte(canonical))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
