//go:build !windows

package transport

// Interop with the Engine's DPoP verifier, whose replay cache lives in
// PostgreSQL (internal/pgtest). The test harness starts PostgreSQL only on
// Unix, hence the build tag; GOOS=windows still vets the rest.

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// wantContext is the agent context header spelled out, so a change of its
// wire form fails here rather than passing through the same helper.
var wantContext = "privileged; v=" + strconv.Itoa(proto.Version)

// engineHandler plays the Engine's side of a Device or Refresh route: it
// checks the agent headers and verifies the DPoP proof with the Engine's
// own verifier, as the API will.
func engineHandler(v *devicetrust.Verifier, jkt string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		fail := func(code, msg string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(proto.Error{Code: code, Message: msg})
		}
		if got := r.Header.Get(proto.HeaderAgentContext); got != wantContext {
			fail("bad_context", got)
			return
		}
		if r.Header.Get("User-Agent") != "cairn-agent/1.2.3" || r.Header.Get("Accept") != "application/json" {
			fail("bad_headers", r.Header.Get("User-Agent")+" "+r.Header.Get("Accept"))
			return
		}
		var body struct{ Echo string }
		if r.Method == http.MethodPost {
			if r.Header.Get("Content-Type") != "application/json" {
				fail("bad_content_type", r.Header.Get("Content-Type"))
				return
			}
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				fail("bad_body", err.Error())
				return
			}
		}
		auth := r.Header.Get("Authorization")
		proof := r.Header.Get(proto.HeaderDPoP)
		var token, wantJKT string
		switch {
		case auth != "":
			token, _ = strings.CutPrefix(auth, "DPoP ")
			wantJKT = jkt
		case proof == "":
			_ = json.NewEncoder(w).Encode(map[string]string{"auth": "none", "echo": body.Echo})
			return
		}
		got, err := v.Verify(r.Context(), proof, r.Method, devicetrust.RequestURL(nil, r), token, wantJKT)
		if err != nil {
			fail(proto.CodeInvalidDPoPProof, err.Error())
			return
		}
		kind := "proof"
		if token != "" {
			kind = "bearer:" + token
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"auth": kind, "echo": body.Echo, "jkt": got})
	}
}

// TestDPoPInterop sends every kind of request through the fallback path to
// a handler that verifies proofs with devicetrust.Verifier: htu is the
// public https URL with the FQDN (not the fallback IP), query stripped;
// ath matches the access token; each request carries a fresh jti.
func TestDPoPInterop(t *testing.T) {
	t.Parallel()
	env := setup(t)
	v := devicetrust.NewVerifier(pgtest.NewDB(t), devicetrust.Options{})
	jkt := agent.Thumbprint(env.key.Public().(ed25519.PublicKey))
	port := env.serve(t, "127.0.0.1:0", engineHandler(v, jkt), false, 0)
	c := env.client(t, "https://"+engineName+":"+port+"/", "127.0.0.1", env.caPEM)
	ctx := context.Background()

	for _, tc := range []struct {
		name   string
		method string
		path   string
		auth   Auth
		want   string
	}{
		{"no auth (enrollment request)", http.MethodPost, proto.PathEnrollRequest, AuthNone, "none"},
		{"proof only (token refresh)", http.MethodPost, proto.PathTokenRefresh, AuthProof, "proof"},
		{"proof only, GET", http.MethodGet, proto.PathRealtimeRoute, AuthProof, "proof"},
		{"bearer", http.MethodPost, proto.PathHeartbeat + "?full=1", AuthBearer("access-1"), "bearer:access-1"},
		{"bearer again: a new jti", http.MethodPost, proto.PathHeartbeat + "?full=1", AuthBearer("access-1"), "bearer:access-1"},
		{"bearer, GET", http.MethodGet, proto.PathRealtimeRoute, AuthBearer("access-2"), "bearer:access-2"},
	} {
		var in any
		if tc.method == http.MethodPost {
			in = map[string]string{"echo": tc.name}
		}
		var out map[string]string
		require.NoError(t, c.Do(ctx, tc.method, tc.path, in, &out, tc.auth), tc.name)
		require.Equal(t, tc.want, out["auth"], tc.name)
		if in != nil {
			require.Equal(t, tc.name, out["echo"], tc.name)
		}
		if tc.auth.proof {
			require.Equal(t, jkt, out["jkt"], tc.name)
		}
	}
	require.Zero(t, c.Dials().Direct, "every connection went through the fallback")

	// A proof made for one URL is refused for another: the Engine really
	// checks what the client signs.
	req, err := c.NewRequest(ctx, http.MethodGet, proto.PathStatus, nil, AuthProof)
	require.NoError(t, err)
	req.URL.Path = proto.PathDetails
	resp, err := c.HTTPClient().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	err = CheckResponse(resp)
	require.Equal(t, proto.CodeInvalidDPoPProof, Code(err))
	require.ErrorContains(t, err, "htu path")
}
