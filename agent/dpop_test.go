package agent

import (
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"
)

// fixedKey is deterministic so thumbprints are reproducible.
func fixedKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	seed, err := hex.DecodeString("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
	require.NoError(t, err)
	return ed25519.NewKeyFromSeed(seed)
}

// TestThumbprintRFC7638 computes the expected thumbprint independently: the
// canonical JSON built with encoding/json from a struct whose members are in
// lexicographic order, hashed per RFC 7638 section 3; and go-jose's own
// Thumbprint agrees.
func TestThumbprintRFC7638(t *testing.T) {
	t.Parallel()
	key := fixedKey(t)
	pub := key.Public().(ed25519.PublicKey)
	// RFC 8032 test vector 1: this seed's public key.
	require.Equal(t, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", hex.EncodeToString(pub))

	canonical, err := json.Marshal(struct {
		Crv string `json:"crv"`
		Kty string `json:"kty"`
		X   string `json:"x"`
	}{"Ed25519", "OKP", base64.RawURLEncoding.EncodeToString(pub)})
	require.NoError(t, err)
	require.Equal(t, `{"crv":"Ed25519","kty":"OKP","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`, string(canonical))
	sum := sha256.Sum256(canonical)
	want := base64.RawURLEncoding.EncodeToString(sum[:])
	require.Equal(t, want, Thumbprint(pub))

	jwk := jose.JSONWebKey{Key: pub}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	require.NoError(t, err)
	require.Equal(t, want, base64.RawURLEncoding.EncodeToString(tp))
}

// TestNewProofInterop checks a proof with go-jose, an implementation that
// shares no code with the one that signed it.
func TestNewProofInterop(t *testing.T) {
	t.Parallel()
	key := fixedKey(t)
	now := time.Unix(1_800_000_000, 0)
	proof, err := NewProof(key, "POST", "https://Engine.Example:8443/api/agent/checkin?x=1#frag", "tok-123", now)
	require.NoError(t, err)

	jws, err := jose.ParseSigned(proof, []jose.SignatureAlgorithm{jose.EdDSA})
	require.NoError(t, err)
	require.Len(t, jws.Signatures, 1)
	hdr := jws.Signatures[0].Protected
	require.Equal(t, "EdDSA", hdr.Algorithm)
	require.Equal(t, "dpop+jwt", hdr.ExtraHeaders[jose.HeaderType])
	require.NotNil(t, hdr.JSONWebKey)
	require.True(t, hdr.JSONWebKey.IsPublic())
	require.Equal(t, key.Public(), hdr.JSONWebKey.Key)

	payload, err := jws.Verify(hdr.JSONWebKey.Key)
	require.NoError(t, err)
	var claims map[string]any
	require.NoError(t, json.Unmarshal(payload, &claims))
	require.Equal(t, "POST", claims["htm"])
	require.Equal(t, "https://engine.example:8443/api/agent/checkin", claims["htu"])
	require.Equal(t, float64(now.Unix()), claims["iat"])
	sum := sha256.Sum256([]byte("tok-123"))
	require.Equal(t, base64.RawURLEncoding.EncodeToString(sum[:]), claims["ath"])
	jti, err := base64.RawURLEncoding.DecodeString(claims["jti"].(string))
	require.NoError(t, err)
	require.Len(t, jti, 16)
	require.Len(t, claims, 5)

	// The protected header holds exactly typ, alg and jwk; the jwk is public.
	rawHeader, err := base64.RawURLEncoding.DecodeString(strings.Split(proof, ".")[0])
	require.NoError(t, err)
	var header map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(rawHeader, &header))
	require.Len(t, header, 3)
	var jwk map[string]string
	require.NoError(t, json.Unmarshal(header["jwk"], &jwk))
	require.Equal(t, map[string]string{"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}, jwk)
}

func TestNewProofWithoutTokenOmitsATHAndJTIsDiffer(t *testing.T) {
	t.Parallel()
	key := fixedKey(t)
	seen := map[string]bool{}
	for range 3 {
		proof, err := NewProof(key, "GET", "https://engine.example/api/agent/config", "", time.Now())
		require.NoError(t, err)
		jws, err := jose.ParseSigned(proof, []jose.SignatureAlgorithm{jose.EdDSA})
		require.NoError(t, err)
		payload, err := jws.Verify(key.Public())
		require.NoError(t, err)
		var claims map[string]any
		require.NoError(t, json.Unmarshal(payload, &claims))
		require.NotContains(t, claims, "ath")
		jti := claims["jti"].(string)
		require.False(t, seen[jti], "jti repeated")
		seen[jti] = true
	}
}

func TestNewProofRefusesBadInput(t *testing.T) {
	t.Parallel()
	key := fixedKey(t)
	cases := []struct {
		name   string
		key    ed25519.PrivateKey
		method string
		url    string
	}{
		{"short key", key[:10], "GET", "https://engine.example/x"},
		{"no method", key, "", "https://engine.example/x"},
		{"relative URL", key, "GET", "/api/agent/x"},
		{"unparsable URL", key, "GET", "https://engine.example/%zz"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewProof(tc.key, tc.method, tc.url, "", time.Now())
			require.Error(t, err)
		})
	}
}
