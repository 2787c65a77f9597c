package fakeengine

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// proofWindow is how old a proof may be, as on the Engine.
const proofWindow = 60 * time.Second

// verifyProof checks the request's DPoP proof the way the Engine does
// (docs/api.md "Device authentication: DPoP"): EdDSA JWS with typ
// dpop+jwt and a public OKP jwk, htm, htu (the request's own URL), iat
// window, ath for token, and a jti never seen before. It returns the proof
// key's thumbprint. Callers hold e.mu.
func (e *Engine) verifyProof(r *http.Request, token string) (string, error) {
	if !supportedContext(r.Header.Get(proto.HeaderAgentContext)) {
		return "", errors.New("agent context header missing or wrong")
	}
	raw := r.Header.Get(proto.HeaderDPoP)
	if raw == "" {
		return "", errors.New("proof missing")
	}
	var claims agent.ProofClaims
	var pub ed25519.PublicKey
	parser := jwt.NewParser(jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithoutClaimsValidation())
	_, err := parser.ParseWithClaims(raw, &claims, func(t *jwt.Token) (any, error) {
		if t.Header["typ"] != agent.DPoPProofType {
			return nil, errors.New("typ is not dpop+jwt")
		}
		jwk, ok := t.Header["jwk"].(map[string]any)
		if !ok || jwk["kty"] != "OKP" || jwk["crv"] != "Ed25519" || jwk["d"] != nil {
			return nil, errors.New("jwk is not a public Ed25519 key")
		}
		x, _ := jwk["x"].(string)
		b, err := base64.RawURLEncoding.DecodeString(x)
		if err != nil || len(b) != ed25519.PublicKeySize {
			return nil, errors.New("jwk x is not an Ed25519 public key")
		}
		pub = b
		return pub, nil
	})
	if err != nil {
		return "", fmt.Errorf("proof: %w", err)
	}
	if claims.HTM != r.Method {
		return "", fmt.Errorf("htm %q is not %s", claims.HTM, r.Method)
	}
	if want := "http://" + r.Host + r.URL.Path; claims.HTU != want {
		return "", fmt.Errorf("htu %q is not %q", claims.HTU, want)
	}
	wantATH := ""
	if token != "" {
		wantATH = agent.AccessTokenHash(token)
	}
	if claims.ATH != wantATH {
		return "", errors.New("ath does not match the access token")
	}
	if claims.IssuedAt == nil || time.Since(claims.IssuedAt.Time) > proofWindow || time.Until(claims.IssuedAt.Time) > 5*time.Second {
		return "", errors.New("iat outside the window")
	}
	if claims.ID == "" || e.jtis[claims.ID] {
		return "", errors.New("jti missing or replayed")
	}
	e.jtis[claims.ID] = true
	return agent.Thumbprint(pub), nil
}

// supportedContext accepts "privileged; v=N" for every protocol N the
// Engine serves, as the Engine does: an agent one version behind is still
// served.
func supportedContext(v string) bool {
	ctx, ver, ok := strings.Cut(v, "; v=")
	if !ok || ctx != proto.ContextPrivileged {
		return false
	}
	n, err := strconv.Atoi(ver)
	return err == nil && proto.Supported(n)
}
