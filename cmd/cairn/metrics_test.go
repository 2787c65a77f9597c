package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// CAIRN_METRICS_ADDR is empty (off) or host:port; a bad value, a token
// file without an address and the removed CAIRN_METRICS_PUBLIC are
// configuration errors naming the setting. Not parallel: t.Setenv.
func TestMetricsListenerSettings(t *testing.T) {
	for _, k := range []string{"CAIRN_METRICS_PUBLIC", "CAIRN_METRICS_ADDR", "CAIRN_METRICS_TOKEN_FILE"} {
		t.Setenv(k, "")
	}
	for _, addr := range []string{"127.0.0.1:9464", "localhost:9464", "[::1]:9464", ":9464", "0.0.0.0:9464"} {
		t.Setenv("CAIRN_METRICS_ADDR", addr)
		c, err := loadTestConfig(t)
		require.NoError(t, err, addr)
		require.Equal(t, addr, c.MetricsAddr)
	}
	t.Setenv("CAIRN_METRICS_ADDR", "")
	c, err := loadTestConfig(t, "-metrics-addr", "127.0.0.1:9100")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9100", c.MetricsAddr, "the flag sets it too")

	for _, bad := range []string{"9464", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:metrics",
		"http://127.0.0.1:9464", "127.0.0.1:9464/metrics"} {
		t.Setenv("CAIRN_METRICS_ADDR", bad)
		_, err := loadTestConfig(t)
		require.ErrorContains(t, err, "CAIRN_METRICS_ADDR", bad)
		require.ErrorContains(t, err, bad)
	}
	t.Setenv("CAIRN_METRICS_ADDR", "")
	_, err = loadTestConfig(t, "-metrics-addr", "nope")
	require.ErrorContains(t, err, "CAIRN_METRICS_ADDR")

	// The variable that served /metrics on the API listeners is refused,
	// pointing at its replacement, so no scrape is lost silently.
	for _, v := range []string{"1", "0"} {
		t.Setenv("CAIRN_METRICS_PUBLIC", v)
		_, err = loadTestConfig(t)
		require.ErrorContains(t, err, "CAIRN_METRICS_PUBLIC was removed")
		require.ErrorContains(t, err, "CAIRN_METRICS_ADDR")
	}
	t.Setenv("CAIRN_METRICS_PUBLIC", "")
	_, err = loadTestConfig(t, "-metrics-public")
	require.Error(t, err, "the flag is gone too")
}

// The token comes from a file, trimmed; an empty, unreadable or
// multi-word file, or a token without a metrics listener, is refused,
// and no error carries the token. Not parallel: t.Setenv.
func TestMetricsTokenFile(t *testing.T) {
	for _, k := range []string{"CAIRN_METRICS_PUBLIC", "CAIRN_METRICS_ADDR", "CAIRN_METRICS_TOKEN_FILE"} {
		t.Setenv(k, "")
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	good := write("token", "s3cret-Metrics-t0ken\n")
	t.Setenv("CAIRN_METRICS_ADDR", "127.0.0.1:9464")
	t.Setenv("CAIRN_METRICS_TOKEN_FILE", good)
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, "s3cret-Metrics-t0ken", c.MetricsToken, "the trailing newline is not part of the token")
	t.Setenv("CAIRN_METRICS_TOKEN_FILE", "")
	c, err = loadTestConfig(t, "-metrics-token-file", good)
	require.NoError(t, err)
	require.Equal(t, "s3cret-Metrics-t0ken", c.MetricsToken, "the flag sets it too")

	for name, tc := range map[string]struct{ file, want string }{
		"missing file":    {filepath.Join(dir, "absent"), "absent"},
		"empty file":      {write("empty", " \n"), "holds no token"},
		"two words":       {write("words", "s3cret two-words\n"), "without spaces"},
		"control in it":   {write("control", "s3cret\x00token"), "without spaces or control"},
		"two lines of it": {write("lines", "s3cret\nline-two\n"), "one line"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("CAIRN_METRICS_TOKEN_FILE", tc.file)
			_, err := loadTestConfig(t)
			require.ErrorContains(t, err, "CAIRN_METRICS_TOKEN_FILE")
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "s3cret", "the token never appears in an error")
		})
	}

	t.Setenv("CAIRN_METRICS_TOKEN_FILE", good)
	t.Setenv("CAIRN_METRICS_ADDR", "")
	_, err = loadTestConfig(t)
	require.ErrorContains(t, err, "CAIRN_METRICS_ADDR", "a token with no metrics listener is a mistake, not a no-op")
}

// The metrics listener answers /metrics only, and with a token only to a
// scrape that carries it; an API listener answers 404 at /metrics (not
// the console's 200) and passes everything else on.
func TestMetricsListenerHandler(t *testing.T) {
	t.Parallel()
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "api "+r.URL.Path) })
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "metrics") })
	do := func(h http.Handler, method, path, authorization string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, path, nil)
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		h.ServeHTTP(rec, req)
		return rec
	}

	apiOnly := withoutMetrics(api)
	require.Equal(t, 404, do(apiOnly, "GET", "/metrics", "").Code, "not the console's 200 either")
	require.Equal(t, "api /api/sites", do(apiOnly, "GET", "/api/sites", "").Body.String())
	require.Equal(t, "api /", do(apiOnly, "GET", "/", "").Body.String())

	open := metricsOnly(metrics, "")
	rec := do(open, "GET", "/metrics", "")
	require.Equal(t, 200, rec.Code)
	require.Equal(t, "metrics", rec.Body.String())
	for _, path := range []string{"/", "/api/sites", "/health", "/metrics/", "/metricsx"} {
		require.Equal(t, 404, do(open, "GET", path, "").Code, path)
	}
	rec = do(open, "POST", "/metrics", "")
	require.Equal(t, 405, rec.Code)
	require.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))

	const token = "s3cret-Metrics-t0ken"
	guarded := metricsOnly(metrics, token)
	for name, authorization := range map[string]string{
		"no header":         "",
		"wrong token":       "Bearer wrong-token",
		"prefix of it":      "Bearer " + token[:len(token)-1],
		"longer than it":    "Bearer " + token + "x",
		"another scheme":    "Basic " + token,
		"no scheme":         token,
		"empty bearer":      "Bearer ",
		"token in the path": "",
	} {
		path := "/metrics"
		if name == "token in the path" {
			path = "/metrics?token=" + token
		}
		rec := do(guarded, "GET", path, authorization)
		require.Equal(t, 401, rec.Code, name)
		require.Equal(t, `Bearer realm="cairn-metrics"`, rec.Header().Get("WWW-Authenticate"), name)
		require.NotContains(t, rec.Body.String(), "metrics\n", name)
		require.NotContains(t, rec.Body.String(), token, name)
	}
	for _, authorization := range []string{"Bearer " + token, "bearer " + token, "Bearer  " + token + " "} {
		rec := do(guarded, "GET", "/metrics", authorization)
		require.Equal(t, 200, rec.Code, authorization)
		require.Equal(t, "metrics", rec.Body.String())
	}
	require.Equal(t, 404, do(guarded, "GET", "/api/sites", "Bearer "+token).Code, "the token opens /metrics only")
}

// startMetrics warns about a listener beyond loopback without a token
// (and only then), names CAIRN_METRICS_ADDR when it cannot listen, and
// its server's Serve returns once it is shut down.
func TestStartMetricsWarnsAndStops(t *testing.T) {
	t.Parallel()
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	const warning = "metrics are served beyond loopback without a token"
	for name, tc := range map[string]struct {
		addr, token string
		warns       bool
	}{
		"every interface, no token": {":0", "", true},
		"every interface, token":    {"0.0.0.0:0", "s3cret-Metrics-t0ken", false},
		"loopback, no token":        {"127.0.0.1:0", "", false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var logged bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logged, nil))
			served := make(chan error, 1)
			srv, err := startMetrics(config{MetricsAddr: tc.addr, MetricsToken: tc.token}, metrics, log, served)
			require.NoError(t, err)
			require.NotNil(t, srv)
			require.Equal(t, tc.warns, strings.Contains(logged.String(), warning), logged.String())
			require.NotContains(t, logged.String(), "s3cret", "the token is never logged")
			require.NoError(t, srv.Shutdown(context.Background()))
			require.ErrorIs(t, <-served, http.ErrServerClosed, "Serve returned: no goroutine is left behind")
		})
	}

	srv, err := startMetrics(config{}, metrics, slog.New(slog.DiscardHandler), make(chan error, 1))
	require.NoError(t, err)
	require.Nil(t, srv, "no address, no listener")

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	_, err = startMetrics(config{MetricsAddr: busy.Addr().String()}, metrics, slog.New(slog.DiscardHandler), make(chan error, 1))
	require.ErrorContains(t, err, "CAIRN_METRICS_ADDR")
}

// CAIRN_PPROF adds the Go profiler to the metrics listener, behind the
// metrics token; without it the listener still answers /metrics only.
func TestPprofOnTheMetricsListener(t *testing.T) {
	t.Parallel()
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "metrics") })
	do := func(h http.Handler, path, authorization string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", path, nil)
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		h.ServeHTTP(rec, req)
		return rec
	}
	const token = "s3cret-Metrics-t0ken"
	require.Equal(t, 404, do(metricsOnly(metrics, token), pprofPrefix+"cmdline", "Bearer "+token).Code, "no profiler unless asked for")

	h := withPprof(metricsOnly(metrics, token), token)
	require.Equal(t, 401, do(h, pprofPrefix+"cmdline", "").Code)
	require.Equal(t, 401, do(h, pprofPrefix+"cmdline", "Bearer wrong").Code)
	rec := do(h, pprofPrefix+"cmdline", "Bearer "+token)
	require.Equal(t, 200, rec.Code)
	require.NotEmpty(t, rec.Body.String())
	require.Equal(t, 200, do(h, pprofPrefix, "Bearer "+token).Code)
	require.Equal(t, "metrics", do(h, metricsPath, "Bearer "+token).Body.String())
	require.Equal(t, 404, do(h, "/api/sites", "Bearer "+token).Code)
}
