package api_test

import (
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
