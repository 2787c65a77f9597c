package devicetrust

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const (
	reqURL = "https://engine.example:8443/api/agent/checkin"
	token  = "access-token-1"
)

var t0 = time.Unix(1_800_000_000, 0)

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return key
}

// clock is a settable test clock.
type clock struct{ unix atomic.Int64 }

func newClock(at time.Time) *clock   { c := &clock{}; c.unix.Store(at.Unix()); return c }
func (c *clock) Now() time.Time      { return time.Unix(c.unix.Load(), 0) }
func (c *clock) Add(d time.Duration) { c.unix.Add(int64(d / time.Second)) }

// forge signs claims with any golang-jwt method and header, for proofs the
// agent would never make.
func forge(t *testing.T, method jwt.SigningMethod, key any, header map[string]any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	for k, v := range header {
		if v == nil {
			delete(tok.Header, k)
		} else {
			tok.Header[k] = v
		}
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

func jwkOf(pub ed25519.PublicKey) map[string]any {
	return map[string]any{"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(pub)}
}

func goodClaims() jwt.MapClaims {
	return jwt.MapClaims{"jti": rand.Text(), "htm": "POST", "htu": reqURL, "iat": t0.Unix(), "ath": agent.AccessTokenHash(token)}
}

func requireInvalid(t *testing.T, err error, msg string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, cairn.IsCode(err, cairn.ECodeInvalidDPoPProof), "got %v", err)
	require.Contains(t, err.Error(), msg)
}

func TestVerifyRoundTrip(t *testing.T) {
	t.Parallel()
	store := pgtest.NewDB(t)
	ctx := context.Background()
	v := NewVerifier(store, Options{Now: newClock(t0).Now})
	key := newKey(t)
	pub := key.Public().(ed25519.PublicKey)
	jkt := agent.Thumbprint(pub)
	require.Equal(t, jkt, Thumbprint(pub))

	proof, err := agent.NewProof(key, "POST", reqURL, token, t0)
	require.NoError(t, err)
	got, err := v.Verify(ctx, proof, "POST", reqURL, token, jkt)
	require.NoError(t, err)
	require.Equal(t, jkt, got)

	// Without a token and without wantJKT (the token-refresh style call).
	proof, err = agent.NewProof(key, "GET", reqURL, "", t0)
	require.NoError(t, err)
	got, err = v.Verify(ctx, proof, "GET", reqURL, "", "")
	require.NoError(t, err)
	require.Equal(t, jkt, got)
}

func TestVerifyURLMatching(t *testing.T) {
	t.Parallel()
	store := pgtest.NewDB(t)
	v := NewVerifier(store, Options{Now: newClock(t0).Now})
	key := newKey(t)
	cases := []struct {
		name, proofURL, requestURL, msg string // msg "" = accepted
	}{
		{"query and fragment ignored", reqURL + "?a=1#f", reqURL + "?b=2", ""},
		{"host case-insensitive", "https://ENGINE.example:8443/api/agent/checkin", reqURL, ""},
		{"default port", "https://engine.example/api/agent/checkin", "https://engine.example:443/api/agent/checkin", ""},
		{"wrong host", "https://evil.example:8443/api/agent/checkin", reqURL, `htu origin "https://evil.example:8443" is not one this Engine serves agents on; it accepts https://engine.example:8443`},
		{"wrong port", "https://engine.example:9443/api/agent/checkin", reqURL, "htu origin"},
		{"wrong path", "https://engine.example:8443/api/agent/other", reqURL, "htu path"},
		{"path case matters", "https://engine.example:8443/api/agent/CHECKIN", reqURL, "htu path"},
		{"wrong scheme", "http://engine.example:8443/api/agent/checkin", reqURL, "htu origin"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			proof, err := agent.NewProof(key, "POST", tc.proofURL, token, t0)
			require.NoError(t, err)
			_, err = v.Verify(context.Background(), proof, "POST", tc.requestURL, token, "")
			if tc.msg == "" {
				require.NoError(t, err)
			} else {
				requireInvalid(t, err, tc.msg)
			}
		})
	}
}

func TestVerifyRefusals(t *testing.T) {
	t.Parallel()
	store := pgtest.NewDB(t)
	v := NewVerifier(store, Options{Now: newClock(t0).Now})
	key := newKey(t)
	pub := key.Public().(ed25519.PublicKey)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	agentProof := func(method, u, tok string, at time.Time) func(t *testing.T) string {
		return func(t *testing.T) string {
			p, err := agent.NewProof(key, method, u, tok, at)
			require.NoError(t, err)
			return p
		}
	}
	with := func(change func(c jwt.MapClaims)) jwt.MapClaims { c := goodClaims(); change(c); return c }
	hdr := map[string]any{"typ": "dpop+jwt", "jwk": jwkOf(pub)}

	cases := []struct {
		name  string
		proof func(t *testing.T) string
		token string
		jkt   string
		msg   string
	}{
		{"missing", func(*testing.T) string { return "" }, token, "", "is missing"},
		{"garbage", func(*testing.T) string { return "a.b.c" }, token, "", "is malformed"},
		{"wrong method", agentProof("GET", reqURL, token, t0), token, "", "htm \"GET\""},
		{"iat too old", agentProof("POST", reqURL, token, t0.Add(-61*time.Second)), token, "", "iat is too old"},
		{"iat too new", agentProof("POST", reqURL, token, t0.Add(6*time.Second)), token, "", "iat is too far in the future"},
		{"missing ath", agentProof("POST", reqURL, "", t0), token, "", "has no ath"},
		{"wrong ath", agentProof("POST", reqURL, "other-token", t0), token, "", "ath does not match"},
		{"wrong jkt", agentProof("POST", reqURL, token, t0), token, agent.Thumbprint(newKey(t).Public().(ed25519.PublicKey)), "cnf.jkt"},
		{"alg none", func(t *testing.T) string {
			return forge(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, hdr, goodClaims())
		}, token, "", "alg \"none\" is not EdDSA"},
		{"alg HS256", func(t *testing.T) string {
			return forge(t, jwt.SigningMethodHS256, []byte(pub), hdr, goodClaims())
		}, token, "", "alg \"HS256\" is not EdDSA"},
		{"alg ES256", func(t *testing.T) string {
			return forge(t, jwt.SigningMethodES256, ecKey, hdr, goodClaims())
		}, token, "", "alg \"ES256\" is not EdDSA"},
		{"typ JWT", func(t *testing.T) string {
			return forge(t, jwt.SigningMethodEdDSA, key, map[string]any{"typ": "JWT", "jwk": jwkOf(pub)}, goodClaims())
		}, token, "", "typ \"JWT\""},
		{"typ missing", func(t *testing.T) string {
			return forge(t, jwt.SigningMethodEdDSA, key, map[string]any{"typ": nil, "jwk": jwkOf(pub)}, goodClaims())
		}, token, "", "typ"},
		{"jwk missing", func(t *testing.T) string {
			return forge(t, jwt.SigningMethodEdDSA, key, map[string]any{"typ": "dpop+jwt"}, goodClaims())
		}, token, "", "no jwk"},
		{"jwk with d", func(t *testing.T) string {
			jwk := jwkOf(pub)
			jwk["d"] = base64.RawURLEncoding.EncodeToString(key.Seed())
			return forge(t, jwt.SigningMethodEdDSA, key, map[string]any{"typ": "dpop+jwt", "jwk": jwk}, goodClaims())
		}, token, "", "private key"},
		{"jwk not Ed25519", func(t *testing.T) string {
			jwk := jwkOf(pub)
			jwk["crv"] = "X25519"
			return forge(t, jwt.SigningMethodEdDSA, key, map[string]any{"typ": "dpop+jwt", "jwk": jwk}, goodClaims())
		}, token, "", "not an OKP Ed25519 key"},
		{"jwk x short", func(t *testing.T) string {
			jwk := jwkOf(pub)
			jwk["x"] = "AAAA"
			return forge(t, jwt.SigningMethodEdDSA, key, map[string]any{"typ": "dpop+jwt", "jwk": jwk}, goodClaims())
		}, token, "", "jwk x"},
		{"signed by another key", func(t *testing.T) string {
			return forge(t, jwt.SigningMethodEdDSA, newKey(t), hdr, goodClaims())
		}, token, "", "signature is invalid"},
		{"tampered payload", func(t *testing.T) string {
			p := strings.Split(agentProof("GET", reqURL, token, t0)(t), ".")
			forged := forge(t, jwt.SigningMethodEdDSA, key, hdr, goodClaims())
			p[1] = strings.Split(forged, ".")[1] // a POST payload under the GET proof's signature
			return strings.Join(p, ".")
		}, token, "", "signature is invalid"},
		{"no iat", func(t *testing.T) string {
			return forge(t, jwt.SigningMethodEdDSA, key, hdr, with(func(c jwt.MapClaims) { delete(c, "iat") }))
		}, token, "", "has no iat"},
		{"no jti", func(t *testing.T) string {
			return forge(t, jwt.SigningMethodEdDSA, key, hdr, with(func(c jwt.MapClaims) { delete(c, "jti") }))
		}, token, "", "jti is missing"},
		{"jti too long", func(t *testing.T) string {
			return forge(t, jwt.SigningMethodEdDSA, key, hdr, with(func(c jwt.MapClaims) { c["jti"] = strings.Repeat("j", 129) }))
		}, token, "", "jti is missing or longer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := v.Verify(context.Background(), tc.proof(t), "POST", reqURL, tc.token, tc.jkt)
			requireInvalid(t, err, tc.msg)
		})
	}

	// The forge helper makes acceptable proofs when nothing is changed, so
	// each refusal above is caused by its one change.
	_, err = v.Verify(context.Background(), forge(t, jwt.SigningMethodEdDSA, key, hdr, goodClaims()), "POST", reqURL, token, agent.Thumbprint(pub))
	require.NoError(t, err)
}

func TestVerifyIATWindowConfigurable(t *testing.T) {
	t.Parallel()
	store := pgtest.NewDB(t)
	v := NewVerifier(store, Options{Now: newClock(t0).Now, MaxAge: 10 * time.Second, MaxFuture: 30 * time.Second})
	key := newKey(t)
	cases := []struct {
		name string
		iat  time.Time
		msg  string
	}{
		{"10s old accepted", t0.Add(-10 * time.Second), ""},
		{"11s old refused", t0.Add(-11 * time.Second), "iat is too old"},
		{"30s ahead accepted", t0.Add(30 * time.Second), ""},
		{"31s ahead refused", t0.Add(31 * time.Second), "iat is too far in the future"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			proof, err := agent.NewProof(key, "POST", reqURL, token, tc.iat)
			require.NoError(t, err)
			_, err = v.Verify(context.Background(), proof, "POST", reqURL, token, "")
			if tc.msg == "" {
				require.NoError(t, err)
			} else {
				requireInvalid(t, err, tc.msg)
			}
		})
	}
}

func TestVerifyReplay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Two replicas: each its own connection pool over one database.
	name := pgtest.NewDatabase(t)
	open := func() *db.Store {
		s, err := db.Open(ctx, pgtest.URL(name))
		require.NoError(t, err)
		t.Cleanup(s.Close)
		return s
	}
	clk := newClock(t0)
	replicaA := NewVerifier(open(), Options{Now: clk.Now})
	replicaB := NewVerifier(open(), Options{Now: clk.Now})
	key := newKey(t)

	proof, err := agent.NewProof(key, "POST", reqURL, token, t0)
	require.NoError(t, err)
	_, err = replicaA.Verify(ctx, proof, "POST", reqURL, token, "")
	require.NoError(t, err)
	_, err = replicaA.Verify(ctx, proof, "POST", reqURL, token, "")
	requireInvalid(t, err, "replay")
	_, err = replicaB.Verify(ctx, proof, "POST", reqURL, token, "")
	requireInvalid(t, err, "replay")

	// A refused proof does not consume its jti: a proof first sent to the
	// wrong URL is still usable once (the jti is checked last).
	proof2, err := agent.NewProof(key, "POST", reqURL, token, t0)
	require.NoError(t, err)
	_, err = replicaB.Verify(ctx, proof2, "GET", reqURL, token, "")
	requireInvalid(t, err, "htm")
	_, err = replicaB.Verify(ctx, proof2, "POST", reqURL, token, "")
	require.NoError(t, err)

	// The sweep keeps entries through the iat window and drops them after.
	clk.Add(DefaultMaxAge)
	n, err := replicaA.DeleteExpired(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	clk.Add(ReplaySkewMargin + time.Second)
	n, err = replicaA.DeleteExpired(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	// After the sweep the iat check alone refuses the old proof.
	_, err = replicaA.Verify(ctx, proof, "POST", reqURL, token, "")
	requireInvalid(t, err, "iat is too old")
}

// Issue 13 item 13: RFC 9864 registers Ed25519 as the alg of Ed25519
// signatures; a proof naming it verifies like one naming EdDSA.
func TestVerifyAcceptsAlgEd25519(t *testing.T) {
	t.Parallel()
	store := pgtest.NewDB(t)
	ctx := context.Background()
	v := NewVerifier(store, Options{Now: newClock(t0).Now})
	key := newKey(t)
	pub := key.Public().(ed25519.PublicKey)
	for _, alg := range []string{"EdDSA", "Ed25519"} {
		method := jwt.GetSigningMethod(alg)
		require.NotNil(t, method, alg)
		proof := forge(t, method, key, map[string]any{"typ": "dpop+jwt", "jwk": jwkOf(pub)}, goodClaims())
		jkt, err := v.Verify(ctx, proof, "POST", reqURL, token, Thumbprint(pub))
		require.NoError(t, err, alg)
		require.Equal(t, Thumbprint(pub), jkt)
	}
	// The name does not make another key type acceptable.
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	bad := forge(t, jwt.SigningMethodES256, ec, map[string]any{"typ": "dpop+jwt", "jwk": jwkOf(pub), "alg": "Ed25519"}, goodClaims())
	_, err = v.Verify(ctx, bad, "POST", reqURL, token, "")
	requireInvalid(t, err, "signature is invalid")
}

// Issue 13 item 13: a replica whose clock runs ahead sweeps a seen jti
// while one whose clock runs behind still accepts its proof by iat; the
// replay margin keeps the entry until the slow replica refuses by iat.
func TestReplayWindowCoversClockSkew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := pgtest.NewDB(t)
	skew := 30 * time.Second
	accepting := newClock(t0)
	ahead, behind := newClock(t0), newClock(t0)
	replicaA := NewVerifier(store, Options{Now: accepting.Now})
	fast := NewVerifier(store, Options{Now: ahead.Now})
	slow := NewVerifier(store, Options{Now: behind.Now})
	key := newKey(t)
	proof, err := agent.NewProof(key, "POST", reqURL, token, t0)
	require.NoError(t, err)
	_, err = replicaA.Verify(ctx, proof, "POST", reqURL, token, "")
	require.NoError(t, err)

	// Real time is t0 + DefaultMaxAge - 1s: the fast replica reads it skew
	// later and sweeps, the slow one reads it skew earlier.
	ahead.Add(DefaultMaxAge - time.Second + skew)
	behind.Add(DefaultMaxAge - time.Second - skew)
	_, err = fast.DeleteExpired(ctx)
	require.NoError(t, err)
	_, err = slow.Verify(ctx, proof, "POST", reqURL, token, "")
	requireInvalid(t, err, "replay")
}

func TestRequestURL(t *testing.T) {
	t.Parallel()
	public, err := url.Parse("https://rmm.example.com")
	require.NoError(t, err)

	r := httptest.NewRequest("POST", "http://10.0.0.5:8080/api/agent/checkin?x=1", nil)
	require.Equal(t, "https://rmm.example.com/api/agent/checkin", RequestURL(public, r))
	require.Equal(t, "http://10.0.0.5:8080/api/agent/checkin", RequestURL(nil, r))
	r.TLS = &tls.ConnectionState{}
	require.Equal(t, "https://10.0.0.5:8080/api/agent/checkin", RequestURL(nil, r))
}

// Under several origins, a proof for none of them says which there are;
// one for a known origin but another path says so instead.
func TestVerifyAnyNamesTheOrigins(t *testing.T) {
	t.Parallel()
	store := pgtest.NewDB(t)
	v := NewVerifier(store, Options{Now: newClock(t0).Now})
	key := newKey(t)
	urls := []string{reqURL, "http://localhost:8080/api/agent/checkin"}
	for _, tc := range []struct{ name, proofURL, msg string }{
		{"second origin", "http://LOCALHOST:8080/api/agent/checkin", ""},
		{"unknown origin", "http://127.0.0.1:8080/api/agent/checkin",
			`htu origin "http://127.0.0.1:8080" is not one this Engine serves agents on; it accepts https://engine.example:8443, http://localhost:8080`},
		{"known origin, other path", "http://localhost:8080/api/agent/other", "htu path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			proof, err := agent.NewProof(key, "POST", tc.proofURL, token, t0)
			require.NoError(t, err)
			_, err = v.VerifyAny(context.Background(), proof, "POST", urls, token, "")
			if tc.msg == "" {
				require.NoError(t, err)
			} else {
				requireInvalid(t, err, tc.msg)
			}
		})
	}
}
