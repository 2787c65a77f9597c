package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProbesRedirectAndConsole(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, p := range []string{"/health", "/healthz", "/live", "/ready", "/startup"} {
		r := f.do(t, "GET", p, "", nil)
		require.Equal(t, 200, r.Status, "%s: %s", p, r.Raw)
	}
	r := f.do(t, "GET", "/engine-status", "", nil)
	require.Equal(t, 308, r.Status)
	require.Equal(t, "/server", r.Header.Get("Location"))

	r = f.do(t, "GET", "/devices?site=1&status=offline", "", nil)
	require.Equal(t, 200, r.Status)
	require.Contains(t, r.Raw, "<title>Cairn</title>", "console routes fall back to index.html")
	r = f.do(t, "GET", "/assets/app.js", "", nil)
	require.Equal(t, 200, r.Status)
	require.Contains(t, r.Raw, "console.log")
	r = f.do(t, "GET", "/api/no-such-route", "", nil)
	require.Equal(t, 404, r.Status)
	require.Equal(t, "not_found", r.Body["error"])
	r = f.do(t, "DELETE", "/api/sites", "", nil)
	require.Equal(t, 405, r.Status)
	require.Equal(t, "method_not_allowed", r.Body["error"])
}

// Readiness answers 503 when PostgreSQL does not.
func TestReadyFailsWithoutPostgres(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.store.Close()
	r := f.do(t, "GET", "/ready", "", nil)
	require.Equal(t, 503, r.Status, r.Raw)
	require.Equal(t, "unavailable", r.Body["checks"].(map[string]any)["postgres"])
	require.Equal(t, "ok", r.Body["checks"].(map[string]any)["temporal"])
}
