package internalauth_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/internalauth"
)

// The gateway process verifies the Engine's requests without a database
// (internalauth.Local): a request signed under the derived key verifies
// once; a replay, a tampered body or path, another key, the underived
// secret (what the gateway itself signs with) and a stale timestamp are
// refused.
func TestLocalVerify(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef0123456789abcdef")
	derived := internalauth.Derive(secret, internalauth.PurposeToGateway)
	require.NotEqual(t, secret, derived)
	now := time.Unix(1_800_000_000, 0)
	sign := func(method, target, body, keyID string, key []byte, at time.Time) *http.Request {
		r := httptest.NewRequest(method, target, strings.NewReader(body))
		internalauth.Sign(r, []byte(body), keyID, key, at)
		return r
	}
	verify := func(l *internalauth.Local, r *http.Request, body string) string {
		return cairn.ErrorCode(l.Verify(r.Method, r.URL.RequestURI(), []byte(body), r.Header))
	}
	for _, tc := range []struct {
		name string
		run  func(l *internalauth.Local) []string
		want []string
	}{
		{"once, then replayed", func(l *internalauth.Local) []string {
			r := sign("GET", "/gateway/v1/dial?guid=g&port=5900", "", "ik_1", derived, now)
			return []string{verify(l, r, ""), verify(l, r, "")}
		}, []string{"", internalauth.ECodeSignatureReplayed}},
		{"tampered body", func(l *internalauth.Local) []string {
			r := sign("POST", "/gateway/v1/x", `{"a":1}`, "ik_1", derived, now)
			return []string{verify(l, r, `{"a":2}`)}
		}, []string{internalauth.ECodeSignatureInvalid}},
		{"tampered path", func(l *internalauth.Local) []string {
			r := sign("GET", "/gateway/v1/dial?guid=g&port=5900", "", "ik_1", derived, now)
			r.URL.RawQuery = "guid=other&port=5900"
			return []string{verify(l, r, "")}
		}, []string{internalauth.ECodeSignatureInvalid}},
		{"another key ID", func(l *internalauth.Local) []string {
			return []string{verify(l, sign("GET", "/gateway/v1/dial", "", "ik_2", derived, now), "")}
		}, []string{internalauth.ECodeSignatureInvalid}},
		{"the secret itself, not the derived key", func(l *internalauth.Local) []string {
			return []string{verify(l, sign("GET", "/gateway/v1/dial", "", "ik_1", secret, now), "")}
		}, []string{internalauth.ECodeSignatureInvalid}},
		{"stale", func(l *internalauth.Local) []string {
			return []string{verify(l, sign("GET", "/gateway/v1/dial", "", "ik_1", derived, now.Add(-internalauth.Window-time.Second)), "")}
		}, []string{internalauth.ECodeSignatureStale}},
		{"unsigned", func(l *internalauth.Local) []string {
			r := httptest.NewRequest("GET", "/gateway/v1/dial", nil)
			return []string{verify(l, r, "")}
		}, []string{internalauth.ECodeSignatureInvalid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := &internalauth.Local{KeyID: "ik_1", Secret: derived, Now: func() time.Time { return now }}
			require.Equal(t, tc.want, tc.run(l))
		})
	}
}
