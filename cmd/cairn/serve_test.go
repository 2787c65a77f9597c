package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/internal/testport"
)

// The test binary doubles as the cairn command: with CAIRN_TEST_MAIN set it
// runs main, so the test drives the real process, signals and all.
func TestMain(m *testing.M) {
	if os.Getenv("CAIRN_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(pgtest.Main(m))
}

// freePort is a port for a process the test starts later (see testport
// for why not port 0).
func freePort(t *testing.T) int { return testport.Free(t) }

type proc struct {
	cmd       *exec.Cmd
	base      string
	httpsBase string
	out       *bytes.Buffer
	dataDir   string
}

// setupCode reads the first-run setup code `cairn serve` keeps in its data
// directory, as an operator with shell access would.
func (p *proc) setupCode(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dataDir, "setup-code"))
	require.NoError(t, err, "cairn serve writes the setup code while setup is pending")
	return strings.TrimSpace(string(b))
}

// startServe runs `cairn serve` as a new user's `make run` would: no
// DATABASE_URL, no TEMPORAL_ADDRESS, only a data directory.
func startServe(t *testing.T, dataDir string, extraEnv ...string) *proc {
	t.Helper()
	return startServeAt(t, dataDir, freePort(t), freePort(t), extraEnv...)
}

// startServeAt is startServe on given ports (a restart the agents must
// find again).
func startServeAt(t *testing.T, dataDir string, httpPort, httpsPort int, extraEnv ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve")
	env := []string{"CAIRN_TEST_MAIN=1", "CAIRN_DATA_DIR=" + dataDir,
		fmt.Sprintf("CAIRN_HTTP_ADDR=127.0.0.1:%d", httpPort), fmt.Sprintf("CAIRN_HTTPS_ADDR=127.0.0.1:%d", httpsPort),
		fmt.Sprintf("CAIRN_TEMPORAL_PORT=%d", freePort(t)), "CAIRN_TEMPORAL_UI_PORT=0"}
	env = append(env, extraEnv...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "TEMPORAL_ADDRESS=") && !strings.HasPrefix(kv, "CAIRN_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd, base: fmt.Sprintf("http://127.0.0.1:%d", httpPort), httpsBase: fmt.Sprintf("https://localhost:%d", httpsPort), out: out, dataDir: dataDir}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_, _ = cmd.Process.Wait()
		}
	})
	ready := assertEventually(2*time.Minute, func() bool {
		res, err := http.Get(p.base + "/ready")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	})
	require.True(t, ready, "engine not ready; output:\n%s", out)
	return p
}

// stop sends Ctrl-C's signal and requires a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "output:\n%s", p.out)
	case <-time.After(60 * time.Second):
		t.Fatalf("engine did not stop within 60s; output:\n%s", p.out)
	}
}

func (p *proc) post(t *testing.T, path, token string, body any) map[string]any {
	t.Helper()
	return p.call(t, "POST", path, token, body)
}

func (p *proc) call(t *testing.T, method, path, token string, body any) map[string]any {
	t.Helper()
	buf, _ := json.Marshal(body)
	req, err := http.NewRequest(method, p.base+path, bytes.NewReader(buf))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body == nil {
		req.Body = http.NoBody
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	require.Less(t, res.StatusCode, 300, "%s %s: %v", method, path, out)
	return out
}

// rawResponse is an answer whatever its status.
type rawResponse struct {
	status int
	body   string
}

// rawCall is call without the status check.
func (p *proc) rawCall(t *testing.T, method, path, token string, body any) rawResponse {
	t.Helper()
	buf, _ := json.Marshal(body)
	req, err := http.NewRequest(method, p.base+path, bytes.NewReader(buf))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body == nil {
		req.Body = http.NoBody
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return rawResponse{status: res.StatusCode, body: string(b)}
}

// totpNow is the code of the current time step, and that time.
func totpNow(t *testing.T, secret string) (string, time.Time) {
	t.Helper()
	now := time.Now()
	return authtest.TOTP(t, secret, now), now
}

// totpAfter is a code the Engine accepts after the one made at used: a
// code is accepted once, and only for a step newer than the last one
// accepted. That is the current step once it has moved on, else the next
// one, which the Engine takes early (one step of skew either way), so
// the test never waits for the clock.
func totpAfter(t *testing.T, secret string, used time.Time) string {
	t.Helper()
	const period = 30
	at := time.Now()
	if at.Unix()/period <= used.Unix()/period {
		at = time.Unix((used.Unix()/period+1)*period, 0)
	}
	return authtest.TOTP(t, secret, at)
}

// A second start keeps what the first one stored, asks for the cipher
// passphrase again, and brings the site workers back.
func TestServeRestartKeepsDataAndStopsCleanly(t *testing.T) {
	t.Parallel()
	// t.TempDir nests in a private directory; as root the cluster runs as
	// the postgres user, which must reach it (else the cluster moves away).
	tmp, err := os.MkdirTemp("", "cairn-serve-test-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	require.NoError(t, os.Chmod(tmp, 0o755))
	dataDir := filepath.Join(tmp, "data")
	metricsPort := freePort(t)
	first := startServe(t, dataDir, fmt.Sprintf("CAIRN_METRICS_ADDR=127.0.0.1:%d", metricsPort))
	require.Equal(t, "aegis_setup_required", first.call(t, "GET", "/api/bootstrap/state", "", nil)["phase"])
	// The setup code: on the terminal, and in a file only this user reads.
	codeFile := filepath.Join(dataDir, "setup-code")
	info, err := os.Stat(codeFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	code := first.setupCode(t)
	require.Contains(t, first.out.String(), "Setup code: "+code)
	r := first.rawCall(t, "POST", "/api/bootstrap/aegis/setup", "", map[string]any{"passphrase": "restart test passphrase"})
	require.Equal(t, 403, r.status, r.body)
	require.Contains(t, r.body, "setup_code_required")
	first.post(t, "/api/bootstrap/aegis/setup", "", map[string]any{"passphrase": "restart test passphrase", "setup_code": code})
	setup := first.post(t, "/api/bootstrap/admin/setup", "", map[string]any{"username": "admin", "password": "restart test password", "setup_code": code})
	secret := setup["mfa"].(map[string]any)["secret"].(string)
	code, used := totpNow(t, secret)
	first.post(t, "/api/bootstrap/admin/mfa/verify", "", map[string]any{"pending_token": setup["pending_token"], "code": code})
	// Setup is finished: the code is gone, file and all.
	require.Eventually(t, func() bool {
		_, err := os.Stat(codeFile)
		return os.IsNotExist(err)
	}, 30*time.Second, 100*time.Millisecond, "the setup-code file outlived setup")
	login := first.post(t, "/api/auth/login", "", map[string]any{"username": "admin", "password": "restart test password"})
	sess := first.post(t, "/api/auth/mfa/verify", "", map[string]any{"pending_token": login["pending_token"], "code": totpAfter(t, secret, used)})
	token := sess["token"].(string)
	first.post(t, "/api/sites", token, map[string]any{"name": "Kept site", "site_worker_slug": "kept"})
	caPEM := first.checkHTTPS(t)
	// Metrics answer on their own listener (CAIRN_METRICS_ADDR), and on
	// neither API listener.
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	require.Contains(t, first.out.String(), "Metrics      "+metricsURL, "the banner names the scrape URL")
	scrape, _ := scrapeMetrics(t, metricsURL, "")
	require.Equal(t, 200, scrape.status)
	require.Contains(t, scrape.body, `cairn_http_requests_total{method="POST",route="/api/sites",status="201"} 1`)
	require.Contains(t, scrape.body, "cairn_db_pool_max_connections ")
	require.Equal(t, 404, first.metrics(t, first.base, caPEM).status, "the plain-HTTP API listener does not serve /metrics")
	require.Equal(t, 404, first.metrics(t, first.httpsBase, caPEM).status, "the HTTPS API listener does not serve /metrics")
	for _, path := range []string{"/", "/health", "/api/sites"} {
		r, _ := scrapeMetrics(t, fmt.Sprintf("http://127.0.0.1:%d%s", metricsPort, path), "")
		require.Equal(t, 404, r.status, "the metrics listener serves /metrics only, not %s", path)
	}
	// Logs are JSON lines by default. The reconcile logs once it has run,
	// in its own time after the Engine is ready.
	reconciled := regexp.MustCompile(`(?m)^\{"time":"[^"]+","level":"INFO","msg":"scheduled job schedules reconciled"`)
	require.Eventually(t, func() bool { return reconciled.MatchString(first.out.String()) }, 2*time.Minute, 100*time.Millisecond,
		"output:\n%s", first.out)
	first.stop(t)
	pgData := filepath.Join(dataDir, "postgres", "data")
	require.FileExists(t, filepath.Join(pgData, "PG_VERSION"), "the cluster lives in the data directory")
	_, err = os.Stat(filepath.Join(pgData, "postmaster.pid"))
	require.ErrorIs(t, err, os.ErrNotExist, "PostgreSQL must be stopped with the Engine")

	// With a token file, a scrape must carry the token.
	const metricsToken = "restart-test-metrics-token"
	tokenFile := filepath.Join(tmp, "metrics-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(metricsToken+"\n"), 0o600))
	metricsPort = freePort(t)
	metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	second := startServe(t, dataDir, fmt.Sprintf("CAIRN_METRICS_ADDR=127.0.0.1:%d", metricsPort), "CAIRN_METRICS_TOKEN_FILE="+tokenFile)
	require.Equal(t, "aegis_unlock_required", second.call(t, "GET", "/api/bootstrap/state", "", nil)["phase"])
	require.NoFileExists(t, codeFile, "a finished setup needs no code")
	require.NotContains(t, second.out.String(), "Setup code:")
	second.post(t, "/api/bootstrap/aegis/unlock", "", map[string]any{"passphrase": "restart test passphrase"})
	// The session made before the restart is still valid.
	sites := second.call(t, "GET", "/api/sites", token, nil)["sites"].([]any)
	require.Len(t, sites, 1)
	require.Equal(t, "kept", sites[0].(map[string]any)["site_worker_slug"])
	require.Eventually(t, func() bool {
		w := second.call(t, "GET", "/api/server/workers", token, nil)["sites"].([]any)
		return len(w) == 1 && w[0].(map[string]any)["local"] == true && w[0].(map[string]any)["state"] == "running"
	}, 30*time.Second, 200*time.Millisecond)
	require.Equal(t, caPEM, second.checkHTTPS(t), "agents pin the CA: a restart keeps it")
	for _, bearer := range []string{"", "wrong-token", metricsToken + "x"} {
		r, header := scrapeMetrics(t, metricsURL, bearer)
		require.Equal(t, 401, r.status, "bearer %q", bearer)
		require.True(t, strings.HasPrefix(header.Get("WWW-Authenticate"), "Bearer"), header.Get("WWW-Authenticate"))
	}
	scrape, _ = scrapeMetrics(t, metricsURL, metricsToken)
	require.Equal(t, 200, scrape.status)
	require.Contains(t, scrape.body, `cairn_http_requests_total{method="GET",route="/api/sites",status="200"} 1`)
	require.Equal(t, 404, second.metrics(t, second.httpsBase, caPEM).status, "a token opens no /metrics on the API listeners")
	second.stop(t)
	require.NotContains(t, second.out.String(), metricsToken, "the token is never logged")
}

// scrapeMetrics gets url as Prometheus would, with bearer as its
// Authorization: Bearer token ("" for none).
func scrapeMetrics(t *testing.T, url, bearer string) (rawResponse, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(t, err)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	res, err := client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return rawResponse{status: res.StatusCode, body: string(b)}, res.Header
}

// metrics gets /metrics on an API listener (an HTTPS base verified
// against caPEM).
func (p *proc) metrics(t *testing.T, base string, caPEM []byte) rawResponse {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	res, err := client.Get(base + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return rawResponse{status: res.StatusCode, body: string(b)}
}

// checkHTTPS fetches the local CA over plain HTTP, as an installer on the
// Engine's machine would, then requires GET /health over HTTPS to verify
// against that CA alone for localhost. It returns the CA.
func (p *proc) checkHTTPS(t *testing.T) []byte {
	t.Helper()
	res, err := http.Get(p.base + "/api/tls/ca.pem")
	require.NoError(t, err)
	caPEM, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode, "%s", caPEM)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	res, err = client.Get(p.httpsBase + "/health")
	require.NoError(t, err, "output:\n%s", p.out)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	var body map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
	require.Equal(t, "ok", body["status"])
	require.Contains(t, p.out.String(), "HTTPS        "+p.httpsBase, "the banner names the HTTPS URL")
	require.Contains(t, p.out.String(), "local CA, SHA-256 fingerprint ", "the banner prints the CA fingerprint")
	return caPEM
}

// Plain HTTP beyond loopback, a bad certificate pair and a bad metrics
// setting (issue 21 item 12) are configuration errors, refused before
// anything starts (no database, no data directory).
func TestServeRefusesBadListenerSettings(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		env  []string
		want []string
	}{
		"plain HTTP beyond loopback": {
			env:  []string{fmt.Sprintf("CAIRN_HTTP_ADDR=0.0.0.0:%d", freePort(t))},
			want: []string{"plain HTTP is served on loopback only", "CAIRN_ALLOW_PLAIN_HTTP=1"},
		},
		"certificate without its key": {
			env:  []string{"CAIRN_TLS_CERT_FILE=/nonexistent/cert.pem"},
			want: []string{"set both CAIRN_TLS_CERT_FILE and CAIRN_TLS_KEY_FILE"},
		},
		"unreadable certificate pair": {
			env:  []string{"CAIRN_TLS_CERT_FILE=/nonexistent/cert.pem", "CAIRN_TLS_KEY_FILE=/nonexistent/key.pem"},
			want: []string{"/nonexistent/cert.pem", "must be a matching PEM pair"},
		},
		"the removed CAIRN_METRICS_PUBLIC": {
			env:  []string{"CAIRN_METRICS_PUBLIC=1"},
			want: []string{"CAIRN_METRICS_PUBLIC was removed", "set CAIRN_METRICS_ADDR"},
		},
		"a metrics address that is not host:port": {
			env:  []string{"CAIRN_METRICS_ADDR=9464"},
			want: []string{"CAIRN_METRICS_ADDR", `"9464"`},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dataDir := filepath.Join(t.TempDir(), "data")
			cmd := exec.Command(os.Args[0], "serve")
			cmd.Env = append([]string{"CAIRN_TEST_MAIN=1", "CAIRN_DATA_DIR=" + dataDir, "PATH=" + os.Getenv("PATH"),
				fmt.Sprintf("CAIRN_HTTP_ADDR=127.0.0.1:%d", freePort(t)), fmt.Sprintf("CAIRN_HTTPS_ADDR=127.0.0.1:%d", freePort(t))}, tc.env...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "output:\n%s", out)
			require.Equal(t, 1, exit.ExitCode())
			for _, w := range tc.want {
				require.Contains(t, string(out), w)
			}
			_, err = os.Stat(dataDir)
			require.ErrorIs(t, err, os.ErrNotExist, "nothing started")
		})
	}
}
