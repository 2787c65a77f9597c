// Package devicetrust is the Engine's side of device authentication. This
// file verifies DPoP proofs (RFC 9449 with Ed25519, alg EdDSA or RFC 9864's
// Ed25519): the agent signs each
// request with its Ed25519 identity key and the Engine checks the proof
// against the request and the access token's key binding (cnf.jkt).
// docs/api.md "Device authentication: DPoP" describes the rules.
package devicetrust

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// Default iat window: a proof may be this old, or this far in the future
// (clock skew between agent and Engine).
const (
	DefaultMaxAge    = 60 * time.Second
	DefaultMaxFuture = 5 * time.Second
	// ReplaySkewMargin keeps a seen jti this long past the iat window. The
	// window is judged on the accepting replica's clock and the sweep on
	// the sweeping replica's: a replica whose clock runs behind accepts a
	// proof for longer, one whose clock runs ahead sweeps earlier. Replicas
	// whose clocks differ by less than the margin still share every replay
	// decision (NTP keeps them far closer).
	ReplaySkewMargin = 2 * time.Minute
	// maxJTILength bounds what a client can make the Engine hash and store
	// per request; the agent sends 22 characters.
	maxJTILength = 128

	proofType = "dpop+jwt"
	algEdDSA  = "EdDSA"
	// algEd25519 is RFC 9864's fully specified name for EdDSA over
	// Ed25519; panva's dpop npm package (and other newer clients) send it.
	algEd25519 = "Ed25519"
)

// proofAlgs are the alg values of an Ed25519 proof.
var proofAlgs = []string{algEdDSA, algEd25519}

func init() {
	// golang-jwt knows Ed25519 signatures only as EdDSA; the fully
	// specified name verifies the same way. Only parsers that list it
	// (proofs) accept it.
	jwt.RegisterSigningMethod(algEd25519, func() jwt.SigningMethod { return ed25519Method{} })
}

// ed25519Method is golang-jwt's EdDSA under the alg name Ed25519.
type ed25519Method struct{}

func (ed25519Method) Alg() string { return algEd25519 }

func (ed25519Method) Verify(signingString string, sig []byte, key any) error {
	return jwt.SigningMethodEdDSA.Verify(signingString, sig, key)
}

func (ed25519Method) Sign(signingString string, key any) ([]byte, error) {
	return jwt.SigningMethodEdDSA.Sign(signingString, key)
}

func isProofAlg(alg any) bool { return alg == algEdDSA || alg == algEd25519 }

// JTIStore is the shared replay cache; *db.Store satisfies it.
type JTIStore interface {
	DpopJTIInsert(ctx context.Context, arg db.DpopJTIInsertParams) (int64, error)
	DpopJTIDeleteExpired(ctx context.Context, now time.Time) (int64, error)
}

// Options tune a Verifier; zero values take the defaults.
type Options struct {
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// MaxAge is how old iat may be; MaxFuture how far ahead of Now.
	MaxAge    time.Duration
	MaxFuture time.Duration
}

// Verifier checks DPoP proofs. One Verifier per Engine replica; the replay
// cache is in PostgreSQL, so every replica over the same database refuses a
// proof any of them accepted before.
type Verifier struct {
	jtis      JTIStore
	now       func() time.Time
	maxAge    time.Duration
	maxFuture time.Duration
}

// NewVerifier returns a Verifier over the shared replay cache.
func NewVerifier(jtis JTIStore, opts Options) *Verifier {
	v := &Verifier{jtis: jtis, now: opts.Now, maxAge: opts.MaxAge, maxFuture: opts.MaxFuture}
	if v.now == nil {
		v.now = time.Now
	}
	if v.maxAge <= 0 {
		v.maxAge = DefaultMaxAge
	}
	if v.maxFuture <= 0 {
		v.maxFuture = DefaultMaxFuture
	}
	return v
}

// proofClaims mirrors RFC 9449 section 4.2. It is deliberately not shared
// with the agent's signer, so tests catch a disagreement on claim names.
type proofClaims struct {
	HTM string `json:"htm"`
	HTU string `json:"htu"`
	ATH string `json:"ath"`
	jwt.RegisteredClaims
}

// invalid is the one client-facing code with a distinct message per
// failure, so the log says what was wrong.
func invalid(format string, args ...any) *cairn.Error {
	return cairn.Errorf(cairn.ECodeInvalidDPoPProof, "DPoP proof "+format, args...)
}

// Verify checks proof for a request with method and url (the Engine's
// public URL of the request, see RequestURL) and, when accessToken is not
// empty, the token it accompanies. wantJKT, when not empty, is the token's
// cnf.jkt; the proof's key must have that thumbprint. It returns the
// proof key's RFC 7638 thumbprint. Refusals are invalid_dpop_proof; a
// database failure is returned as a plain error.
func (v *Verifier) Verify(ctx context.Context, proof string, method, url string, accessToken string, wantJKT string) (string, error) {
	return v.VerifyAny(ctx, proof, method, []string{url}, accessToken, wantJKT)
}

// VerifyAny is Verify for an Engine reachable under several origins (the
// public URL and the HTTPS address agents use): htu must match one of urls.
func (v *Verifier) VerifyAny(ctx context.Context, proof string, method string, urls []string, accessToken string, wantJKT string) (string, error) {
	if len(urls) == 0 {
		return "", errors.New("devicetrust: no request URL to verify htu against")
	}
	if proof == "" {
		return "", invalid("is missing")
	}
	var (
		claims proofClaims
		jkt    string
		keyErr *cairn.Error
	)
	parser := jwt.NewParser(jwt.WithValidMethods(proofAlgs), jwt.WithoutClaimsValidation())
	tok, err := parser.ParseWithClaims(proof, &claims, func(t *jwt.Token) (any, error) {
		pub, tp, e := proofKey(t)
		if e != nil {
			keyErr = e
			return nil, e
		}
		jkt = tp
		return pub, nil
	})
	switch {
	case err == nil:
	case keyErr != nil:
		return "", keyErr
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "", invalid("is malformed")
	case tok != nil && !isProofAlg(tok.Header["alg"]):
		return "", invalid("alg %q is not EdDSA or Ed25519", fmt.Sprint(tok.Header["alg"]))
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "", invalid("signature is invalid")
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "", invalid("alg is not EdDSA or Ed25519")
	default:
		return "", invalid("is malformed")
	}

	if claims.HTM != method {
		return "", invalid("htm %q does not match the request method %q", claims.HTM, method)
	}
	if err := matchAnyHTU(claims.HTU, urls); err != nil {
		return "", err
	}
	if claims.IssuedAt == nil {
		return "", invalid("has no iat")
	}
	now, iat := v.now(), claims.IssuedAt.Time
	if now.Sub(iat) > v.maxAge {
		return "", invalid("iat is too old (%s ago, limit %s)", now.Sub(iat).Round(time.Second), v.maxAge)
	}
	if iat.Sub(now) > v.maxFuture {
		return "", invalid("iat is too far in the future (%s ahead, limit %s)", iat.Sub(now).Round(time.Second), v.maxFuture)
	}
	if accessToken != "" {
		if claims.ATH == "" {
			return "", invalid("has no ath for the access token")
		}
		sum := sha256.Sum256([]byte(accessToken))
		want := base64.RawURLEncoding.EncodeToString(sum[:])
		if subtle.ConstantTimeCompare([]byte(claims.ATH), []byte(want)) != 1 {
			return "", invalid("ath does not match the access token")
		}
	}
	if wantJKT != "" && subtle.ConstantTimeCompare([]byte(jkt), []byte(wantJKT)) != 1 {
		return "", invalid("key does not match the access token's cnf.jkt")
	}
	if claims.ID == "" || len(claims.ID) > maxJTILength {
		return "", invalid("jti is missing or longer than %d characters", maxJTILength)
	}
	// Last, so a refused proof does not consume its jti.
	h := sha256.New()
	h.Write([]byte(jkt))
	h.Write([]byte{0})
	h.Write([]byte(claims.ID))
	n, err := v.jtis.DpopJTIInsert(ctx, db.DpopJTIInsertParams{
		JtiHash:   h.Sum(nil),
		ExpiresAt: iat.Add(v.maxAge + ReplaySkewMargin),
	})
	if err != nil {
		return "", fmt.Errorf("devicetrust: record DPoP jti: %w", err)
	}
	if n == 0 {
		return "", invalid("jti was already used (replay)")
	}
	return jkt, nil
}

// DeleteExpired removes seen jti entries past their expiry; run it
// periodically (once a minute is plenty). It returns how many it deleted.
func (v *Verifier) DeleteExpired(ctx context.Context) (int64, error) {
	n, err := v.jtis.DpopJTIDeleteExpired(ctx, v.now())
	if err != nil {
		return 0, fmt.Errorf("devicetrust: sweep DPoP jtis: %w", err)
	}
	return n, nil
}

// proofKey checks the protected header (typ, alg, jwk) and returns the
// public key with its RFC 7638 thumbprint.
func proofKey(t *jwt.Token) (ed25519.PublicKey, string, *cairn.Error) {
	if t.Header["typ"] != proofType {
		return nil, "", invalid("typ %q is not %s", fmt.Sprint(t.Header["typ"]), proofType)
	}
	if !isProofAlg(t.Header["alg"]) {
		return nil, "", invalid("alg %q is not EdDSA or Ed25519", fmt.Sprint(t.Header["alg"]))
	}
	raw, ok := t.Header["jwk"].(map[string]any)
	if !ok {
		return nil, "", invalid("header has no jwk object")
	}
	if _, ok := raw["d"]; ok {
		return nil, "", invalid("jwk contains a private key")
	}
	kty, _ := raw["kty"].(string)
	crv, _ := raw["crv"].(string)
	x, _ := raw["x"].(string)
	if kty != "OKP" || crv != "Ed25519" {
		return nil, "", invalid("jwk is not an OKP Ed25519 key")
	}
	pub, err := base64.RawURLEncoding.DecodeString(x)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, "", invalid("jwk x is not a base64url Ed25519 public key")
	}
	return ed25519.PublicKey(pub), Thumbprint(pub), nil
}

// Thumbprint is the RFC 7638 JWK thumbprint of an Ed25519 public key, the
// value access tokens carry as cnf.jkt.
func Thumbprint(pub ed25519.PublicKey) string {
	canonical, _ := json.Marshal(struct {
		Crv string `json:"crv"`
		Kty string `json:"kty"`
		X   string `json:"x"`
	}{"Ed25519", "OKP", base64.RawURLEncoding.EncodeToString(pub)})
	sum := sha256.Sum256(canonical)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// matchHTU compares the proof's htu with the request URL: scheme and host
// case-insensitively (a default port equals no port), path exactly; query
// and fragment are ignored on both sides (RFC 9449 section 4.3).
func matchHTU(htu, requestURL string) *cairn.Error {
	p, err := url.Parse(htu)
	if err != nil || p.Scheme == "" || p.Host == "" {
		return invalid("htu %q is not an absolute URL", htu)
	}
	r, err := url.Parse(requestURL)
	if err != nil || r.Scheme == "" || r.Host == "" {
		return invalid("cannot be checked: request URL %q is not absolute", requestURL)
	}
	if !strings.EqualFold(p.Scheme, r.Scheme) {
		return invalid("htu scheme %q does not match the request's %q", p.Scheme, r.Scheme)
	}
	if !strings.EqualFold(hostPort(p), hostPort(r)) {
		return invalid("htu host %q does not match the request's %q", p.Host, r.Host)
	}
	if pathOf(p) != pathOf(r) {
		return invalid("htu path %q does not match the request's %q", p.EscapedPath(), r.EscapedPath())
	}
	return nil
}

// CheckHTU is an early, advisory look at a proof on a request that needs
// none (the enrollment request): when its htu names no origin of the
// Engine, the agent is told which origins there are before an approval is
// created that its polls could never collect. Nothing else is verified
// and no jti is stored; requests that authenticate by a proof use
// VerifyAny.
func CheckHTU(proof string, urls []string) error {
	var claims proofClaims
	if _, _, err := jwt.NewParser().ParseUnverified(proof, &claims); err != nil {
		return invalid("is malformed")
	}
	if err := matchAnyHTU(claims.HTU, urls); err != nil {
		return err
	}
	return nil
}

// matchAnyHTU is matchHTU against the request URL under each of the
// Engine's origins. A proof signed for none of them is told which origins
// there are, so an agent set up with an address the Engine does not serve
// agents on (or a proxy's) says what to use instead.
func matchAnyHTU(htu string, requestURLs []string) *cairn.Error {
	p, err := url.Parse(htu)
	if err != nil || p.Scheme == "" || p.Host == "" {
		return invalid("htu %q is not an absolute URL", htu)
	}
	origins := make([]string, 0, len(requestURLs))
	for _, u := range requestURLs {
		r, err := url.Parse(u)
		if err != nil || r.Scheme == "" || r.Host == "" {
			return invalid("cannot be checked: request URL %q is not absolute", u)
		}
		if strings.EqualFold(p.Scheme, r.Scheme) && strings.EqualFold(hostPort(p), hostPort(r)) {
			// The origin is this Engine's: only the path can differ.
			return matchHTU(htu, u)
		}
		origins = append(origins, r.Scheme+"://"+r.Host)
	}
	return invalid("htu origin %q is not one this Engine serves agents on; it accepts %s",
		p.Scheme+"://"+p.Host, strings.Join(origins, ", "))
}

func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

func pathOf(u *url.URL) string {
	if p := u.EscapedPath(); p != "" {
		return p
	}
	return "/"
}

// RequestURL is the URL to verify a proof against: the Engine's public URL
// (CAIRN_PUBLIC_URL) supplies scheme and host, because behind a reverse
// proxy or load balancer r.Host and r.TLS describe the hop, not what the
// agent signed; the path is the request's. With public nil it falls back to
// the request itself (direct TLS or loopback).
func RequestURL(public *url.URL, r *http.Request) string {
	return requestURL(public, r)
}

// RequestURLs is RequestURL under each of the Engine's origins.
func RequestURLs(origins []*url.URL, r *http.Request) []string {
	if len(origins) == 0 {
		return []string{requestURL(nil, r)}
	}
	out := make([]string, len(origins))
	for i, o := range origins {
		out[i] = requestURL(o, r)
	}
	return out
}

func requestURL(public *url.URL, r *http.Request) string {
	u := url.URL{Path: r.URL.Path, RawPath: r.URL.RawPath}
	if public != nil {
		u.Scheme, u.Host = public.Scheme, public.Host
	} else {
		u.Scheme, u.Host = "http", r.Host
		if r.TLS != nil {
			u.Scheme = "https"
		}
	}
	return u.String()
}
