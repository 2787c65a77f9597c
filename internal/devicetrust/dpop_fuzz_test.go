package devicetrust

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/db"
)

// memJTIs is an in-memory replay cache, so fuzzing runs at CPU speed.
type memJTIs struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (m *memJTIs) DpopJTIInsert(_ context.Context, arg db.DpopJTIInsertParams) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen[string(arg.JtiHash)] {
		return 0, nil
	}
	m.seen[string(arg.JtiHash)] = true
	return 1, nil
}

func (m *memJTIs) DpopJTIDeleteExpired(context.Context, time.Time) (int64, error) { return 0, nil }

// fuzzKey is a fixed key, so the fuzzer's mutations of header and claims
// are signed and reach the checks behind the signature.
var fuzzKey = func() ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("cairn dpop fuzz key"))
	return ed25519.NewKeyFromSeed(seed[:])
}()

// signRaw signs header and claims as they are, JSON or not.
func signRaw(header, claims []byte) string {
	enc := base64.RawURLEncoding
	in := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	return in + "." + enc.EncodeToString(ed25519.Sign(fuzzKey, []byte(in)))
}

// FuzzVerifyProof checks arbitrary proofs, signed or not: the verifier
// refuses with invalid_dpop_proof (a client error) or accepts a proof
// whose claims really match the request, and never panics.
func FuzzVerifyProof(f *testing.F) {
	pub := fuzzKey.Public().(ed25519.PublicKey)
	header, _ := json.Marshal(map[string]any{"alg": "EdDSA", "typ": "dpop+jwt", "jwk": agent.PublicJWK(pub)})
	claims, _ := json.Marshal(map[string]any{"jti": "seed-jti", "htm": "POST", "htu": reqURL, "iat": t0.Unix(), "ath": agent.AccessTokenHash(token)})
	real, err := agent.NewProof(fuzzKey, "POST", reqURL, token, t0)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(header, claims, "", "POST", reqURL, token)
	f.Add(header, claims, real, "POST", reqURL, token)
	f.Add(header, claims, "", "GET", "http://127.0.0.1:8080/api/agent/token/refresh", "")
	f.Add([]byte(`{"alg":"none","typ":"dpop+jwt"}`), claims, "", "POST", reqURL, "")
	f.Add([]byte(`{"alg":"EdDSA","typ":"dpop+jwt","jwk":{"kty":"OKP","crv":"Ed25519","x":"AAAA","d":"x"}}`), claims, "", "POST", reqURL, "")
	f.Add(header, []byte(`{"htm":"POST","htu":"https://[::1]:99999/%zz","iat":1e300,"jti":""}`), "", "POST", "https://[::1]/x", "")
	f.Fuzz(func(t *testing.T, header, claims []byte, raw, method, reqURL, accessToken string) {
		v := NewVerifier(&memJTIs{seen: map[string]bool{}}, Options{Now: func() time.Time { return t0 }})
		proof := raw
		if proof == "" {
			proof = signRaw(header, claims)
		}
		jkt, err := v.Verify(context.Background(), proof, method, reqURL, accessToken, "")
		if err != nil {
			if !cairn.IsCode(err, cairn.ECodeInvalidDPoPProof) {
				t.Fatalf("refusal is not invalid_dpop_proof: %v", err)
			}
			return
		}
		var c proofClaims
		parts := strings.Split(proof, ".")
		body, _ := base64.RawURLEncoding.DecodeString(parts[1])
		if json.Unmarshal(body, &c) != nil || c.HTM != method || matchHTU(c.HTU, reqURL) != nil || jkt == "" {
			t.Fatalf("accepted a proof that does not match the request: %s for %s %s", body, method, reqURL)
		}
		if _, err := v.Verify(context.Background(), proof, method, reqURL, accessToken, ""); err == nil {
			t.Fatal("accepted the same proof twice")
		}
	})
}

// FuzzMatchHTU compares arbitrary URLs: never a panic, every absolute URL
// matches itself, and a match means the scheme and path agree.
func FuzzMatchHTU(f *testing.F) {
	for _, s := range [][2]string{
		{reqURL, reqURL},
		{reqURL + "?a=1#f", reqURL + "?b=2"},
		{"https://ENGINE.example:8443/api/agent/checkin", reqURL},
		{"https://engine.example/api/agent/checkin", "https://engine.example:443/api/agent/checkin"},
		{"http://127.0.0.1:8080/api/agent/enroll/poll", "https://127.0.0.1:8443/api/agent/enroll/poll"},
		{"http://[::1]:8080/api/agent/checkin", "http://localhost:8080/api/agent/checkin"},
		{"https://engine.example/a%2Fb", "https://engine.example/a/b"},
		{"HTTPS://engine.example", "https://engine.example/"},
		{"https://user:pw@engine.example:0/x", "https://engine.example:/x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, htu, request string) {
		err := matchHTU(htu, request)
		if u, perr := url.Parse(htu); perr == nil && u.Scheme != "" && u.Host != "" {
			if self := matchHTU(htu, htu); self != nil {
				t.Fatalf("%q does not match itself: %v", htu, self)
			}
		}
		if err != nil {
			if !cairn.IsCode(err, cairn.ECodeInvalidDPoPProof) {
				t.Fatalf("refusal is not invalid_dpop_proof: %v", err)
			}
			return
		}
		p, _ := url.Parse(htu)
		r, _ := url.Parse(request)
		if !strings.EqualFold(p.Scheme, r.Scheme) || pathOf(p) != pathOf(r) {
			t.Fatalf("%q matched %q", htu, request)
		}
	})
}
