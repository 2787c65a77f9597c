package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/tlsca"
)

// Installers download the local CA to pin it; an Engine without one says
// so instead of serving something else.
func TestCAPEMServesTheLocalCAOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	local, err := tlsca.Load(tlsca.Options{Dir: dir})
	require.NoError(t, err)
	// The local CA's own certificate, served as a provided one.
	provided, err := tlsca.Load(tlsca.Options{Dir: t.TempDir(),
		CertFile: filepath.Join(dir, "server.pem"), KeyFile: filepath.Join(dir, "server-key.pem")})
	require.NoError(t, err)
	get := func(certs *tlsca.Manager) response {
		hs := httptest.NewServer(api.New(api.Deps{TLS: certs, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler())
		t.Cleanup(hs.Close)
		req, err := http.NewRequest("GET", hs.URL+"/api/tls/ca.pem", nil)
		require.NoError(t, err)
		return do(t, req)
	}
	r := get(local)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, string(local.CAPEM()), r.Raw)
	require.Equal(t, "application/x-pem-file", r.Header.Get("Content-Type"))

	for name, certs := range map[string]*tlsca.Manager{"provided": provided, "HTTPS off": nil} {
		r = get(certs)
		require.Equal(t, 404, r.Status, "%s: %s", name, r.Raw)
		require.Equal(t, "not_found", r.Body["error"])
		require.Contains(t, r.Body["message"], "no local CA")
	}
}

// Session cookies set over HTTPS are Secure; over plain HTTP (loopback)
// they cannot be, or the browser would drop them.
func TestSessionCookiesAreSecureOverHTTPS(t *testing.T) {
	t.Parallel()
	f := setup(t)
	secret := f.bootstrap(t)
	plain := f.login(t, f.url, "admin", adminPassword, secret)
	for _, c := range (&http.Response{Header: plain.Header}).Cookies() {
		require.False(t, c.Secure, "%s over plain HTTP", c.Name)
	}

	hs := httptest.NewTLSServer(f.engine.srv.Handler())
	t.Cleanup(hs.Close)
	post := func(path string, body map[string]any) *http.Response {
		buf, err := json.Marshal(body)
		require.NoError(t, err)
		res, err := hs.Client().Post(hs.URL+path, "application/json", bytes.NewReader(buf))
		require.NoError(t, err)
		t.Cleanup(func() { res.Body.Close() })
		require.Equal(t, 200, res.StatusCode)
		return res
	}
	var login map[string]any
	require.NoError(t, json.NewDecoder(post("/api/auth/login", map[string]any{"username": "admin", "password": adminPassword}).Body).Decode(&login))
	res := post("/api/auth/mfa/verify", map[string]any{"pending_token": login["pending_token"], "code": f.totp(t, secret)})
	names := map[string]bool{}
	for _, c := range res.Cookies() {
		require.True(t, c.Secure, "%s over HTTPS", c.Name)
		names[c.Name] = true
	}
	require.Equal(t, map[string]bool{"cairn_session": true, "cairn_csrf": true}, names)
}
