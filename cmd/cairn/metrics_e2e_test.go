package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// Issue 21 item 12: a standalone `cairn worker` serves its metrics on
// CAIRN_METRICS_ADDR behind the token, not on the agents' listener, and
// stops cleanly with it.
func TestWorkerServesMetricsOnItsOwnListener(t *testing.T) {
	t.Parallel()
	tmp, err := os.MkdirTemp("", "cairn-worker-metrics-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	require.NoError(t, os.Chmod(tmp, 0o755))

	dbURL := pgtest.URL(pgtest.NewDatabase(t))
	temporalPort := freePort(t)
	eng := startServe(t, filepath.Join(tmp, "data"), "DATABASE_URL="+dbURL, "CAIRN_SITE_WORKERS=none",
		fmt.Sprintf("CAIRN_TEMPORAL_PORT=%d", temporalPort))
	token := eng.signIn(t)
	slug := eng.post(t, "/api/sites", token, map[string]any{"name": "Metrics", "site_worker_slug": "metrics"})["site_worker_slug"].(string)

	pass := filepath.Join(tmp, "passphrase")
	require.NoError(t, os.WriteFile(pass, []byte("e2e test passphrase"), 0o600))
	const metricsToken = "worker-metrics-token"
	tokenFile := filepath.Join(tmp, "metrics-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(metricsToken+"\n"), 0o600))
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", freePort(t))
	w := startWorker(t, slug, []string{"DATABASE_URL=" + dbURL, fmt.Sprintf("TEMPORAL_ADDRESS=127.0.0.1:%d", temporalPort),
		"CAIRN_PUBLIC_URL=" + eng.publicURL(t), "CAIRN_DATA_DIR=" + filepath.Join(tmp, "data"), "CAIRN_AEGIS_PASSPHRASE_FILE=" + pass,
		"CAIRN_METRICS_ADDR=" + strings.TrimSuffix(strings.TrimPrefix(metricsURL, "http://"), "/metrics"),
		"CAIRN_METRICS_TOKEN_FILE=" + tokenFile})

	r, header := scrapeMetrics(t, metricsURL, "")
	require.Equal(t, 401, r.status, "no token, no metrics")
	require.True(t, strings.HasPrefix(header.Get("WWW-Authenticate"), "Bearer"))
	r, _ = scrapeMetrics(t, metricsURL, "not-"+metricsToken)
	require.Equal(t, 401, r.status)
	r, _ = scrapeMetrics(t, metricsURL, metricsToken)
	require.Equal(t, 200, r.status)
	require.Contains(t, r.body, "cairn_db_pool_max_connections ", "the worker's own series")
	r, _ = scrapeMetrics(t, w.base+"/metrics", metricsToken)
	require.Equal(t, 404, r.status, "the agents' listener serves no metrics")

	require.NoError(t, w.cmd.Process.Signal(syscall.SIGINT))
	// No bound on how long the stop takes (a loaded CI machine): the
	// test's own timeout is the bound; a hang shows up there with the stack.
	require.NoError(t, w.cmd.Wait(), "output:\n%s", w.out)
	require.NotContains(t, w.out.String(), metricsToken, "the token is never logged")
}
