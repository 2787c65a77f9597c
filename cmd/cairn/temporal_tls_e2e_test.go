package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/devtemporal"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/internal/testpki"
	"github.com/cairn-rmm/cairn/workflows"
)

// temporalCheck is the temporal check of a /ready answer.
func temporalCheck(t *testing.T, body map[string]any) string {
	t.Helper()
	return body["checks"].(map[string]any)["temporal"].(string)
}

// getJSON is the JSON object url answers, whatever its status; nil when
// it does not answer one.
func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	var out map[string]any
	if json.NewDecoder(res.Body).Decode(&out) != nil {
		return nil
	}
	return out
}

// Issue 21 item 1: `cairn serve` and `cairn worker` reach a Temporal
// frontend that requires client certificates with TEMPORAL_TLS_*, and
// without the client certificate they do not.
func TestServeAndWorkerReachTemporalOverMTLS(t *testing.T) {
	t.Parallel()
	tmp, err := os.MkdirTemp("", "cairn-temporal-mtls-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	serverCA := testpki.NewCA(t, "temporal-server")
	clientCA := testpki.NewCA(t, "temporal-clients")
	frontend := serverCA.Server(t, "frontend", "127.0.0.1")
	system := clientCA.Client(t, "system", "temporal-system")
	engineCert := clientCA.Client(t, "engine", "cairn-engine")
	srv, err := devtemporal.Start(devtemporal.Options{SearchAttributes: workflows.SearchAttributes,
		LogLevel: slog.LevelError, Logger: slog.New(slog.DiscardHandler),
		TLS: &devtemporal.TLS{CertFile: frontend.CertFile, KeyFile: frontend.KeyFile, ClientCAFile: clientCA.CertFile,
			RootCAFile: serverCA.CertFile, ClientCertFile: system.CertFile, ClientKeyFile: system.KeyFile}})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)

	dbURL := pgtest.URL(pgtest.NewDatabase(t))
	mtls := []string{"DATABASE_URL=" + dbURL, "TEMPORAL_ADDRESS=" + srv.Address,
		"TEMPORAL_TLS_CERT=" + engineCert.CertFile, "TEMPORAL_TLS_KEY=" + engineCert.KeyFile, "TEMPORAL_TLS_CA=" + serverCA.CertFile}
	eng := startServe(t, filepath.Join(tmp, "data"), mtls...)
	require.Eventually(t, func() bool {
		return temporalCheck(t, eng.call(t, "GET", "/ready", "", nil)) == "ok"
	}, 5*time.Minute, 200*time.Millisecond, "serve reaches Temporal over mTLS; output:\n%s", eng.out)
	token := eng.signIn(t)
	require.Eventually(t, func() bool {
		engine, _ := eng.call(t, "GET", "/api/server/workers", token, nil)["engine"].(map[string]any)
		return engine["state"] == "running" && engine["local"] == true
	}, 5*time.Minute, 200*time.Millisecond, "the engine worker polls over mTLS; output:\n%s", eng.out)

	// Site workers hold the master cipher (workflow payloads are sealed).
	pass := filepath.Join(tmp, "passphrase")
	require.NoError(t, os.WriteFile(pass, []byte("e2e test passphrase"), 0o600))
	workerEnv := append([]string{"CAIRN_PUBLIC_URL=" + eng.publicURL(t), "CAIRN_DATA_DIR=" + filepath.Join(tmp, "worker"),
		"CAIRN_AEGIS_PASSPHRASE_FILE=" + pass}, mtls...)
	w := startWorker(t, "mtls", workerEnv)
	require.Eventually(t, func() bool {
		r := getJSON(t, w.base+"/ready")
		return r != nil && temporalCheck(t, r) == "ok"
	}, 5*time.Minute, 200*time.Millisecond, "the worker reaches Temporal over mTLS; output:\n%s", w.out)

	// The same deployment without the client certificate: Temporal turns
	// the connection away, and /ready says so.
	noCert := []string{"DATABASE_URL=" + dbURL, "TEMPORAL_ADDRESS=" + srv.Address, "TEMPORAL_TLS_CA=" + serverCA.CertFile,
		"CAIRN_SITE_WORKERS=none"}
	bare := startServe(t, filepath.Join(tmp, "bare"), noCert...)
	require.Equal(t, "unavailable", temporalCheck(t, bare.call(t, "GET", "/ready", "", nil)), "output:\n%s", bare.out)
	w2 := startWorker(t, "mtls", append([]string{"CAIRN_PUBLIC_URL=" + eng.publicURL(t), "CAIRN_DATA_DIR=" + filepath.Join(tmp, "worker2"),
		"CAIRN_AEGIS_PASSPHRASE_FILE=" + pass}, noCert...))
	require.Equal(t, "unavailable", temporalCheck(t, getJSON(t, w2.base+"/ready")), "output:\n%s", w2.out)
}

// A client certificate that does not load stops `cairn serve` before
// anything starts (the database it names does not answer, so an Engine
// that got that far would fail on it instead), naming the setting and
// never printing the key.
func TestServeRefusesABadTemporalClientCertificate(t *testing.T) {
	t.Parallel()
	pair := testpki.NewCA(t, "temporal").Client(t, "engine", "cairn-engine")
	keyPEM, err := os.ReadFile(pair.KeyFile)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "serve")
	cmd.Env = []string{"CAIRN_TEST_MAIN=1", "CAIRN_DATA_DIR=" + t.TempDir(), "CAIRN_HTTPS_ADDR=off",
		fmt.Sprintf("DATABASE_URL=postgres://cairn@127.0.0.1:%d/cairn", freePort(t)),
		fmt.Sprintf("CAIRN_HTTP_ADDR=127.0.0.1:%d", freePort(t)), "TEMPORAL_ADDRESS=127.0.0.1:7233",
		// Swapped: the key where the certificate belongs.
		"TEMPORAL_TLS_CERT=" + pair.KeyFile, "TEMPORAL_TLS_KEY=" + pair.CertFile}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, "HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "output:\n%s", out)
	require.Contains(t, string(out), "TEMPORAL_TLS_CERT")
	require.Contains(t, string(out), "does not start with a PEM certificate")
	body := strings.Join(strings.Split(string(keyPEM), "\n")[1:2], "")
	require.NotEmpty(t, body)
	require.NotContains(t, string(out), body)
}
