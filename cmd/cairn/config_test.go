package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/transfers"
	"github.com/cairn-rmm/cairn/internal/vnc"
)

func loadTestConfig(t *testing.T, args ...string) (config, error) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return loadConfig(fs, args)
}

// Not parallel: t.Setenv changes the process environment, which the
// testing package forbids in parallel tests.
func TestGitHubSettingsFromTheEnvironment(t *testing.T) {
	t.Setenv("CAIRN_GITHUB_API_URL", "")
	t.Setenv("CAIRN_GITHUB_TOKEN", "")
	t.Setenv("GITHUB_TOKEN", "")
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, "https://api.github.com", c.GitHubAPIURL)
	require.Empty(t, c.GitHubToken)

	t.Setenv("GITHUB_TOKEN", "from-github-token")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, "from-github-token", c.GitHubToken, "GITHUB_TOKEN is the fallback")

	t.Setenv("CAIRN_GITHUB_TOKEN", "from-cairn")
	t.Setenv("CAIRN_GITHUB_API_URL", "http://127.0.0.1:9/api")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, "from-cairn", c.GitHubToken, "CAIRN_GITHUB_TOKEN comes first")
	require.Equal(t, "http://127.0.0.1:9/api", c.GitHubAPIURL)

	_, err = loadTestConfig(t, "-github-api-url", "ftp://example.test")
	require.ErrorContains(t, err, "github-api-url")
}

// A loopback Engine is named localhost by default: browsers refuse IP
// addresses as WebAuthn relying parties, and passkeys should work locally.
func TestDefaultPublicURLNamesLoopbackLocalhost(t *testing.T) {
	t.Parallel()
	require.Equal(t, "http://localhost:8080", defaultPublicURL("127.0.0.1:8080"))
	require.Equal(t, "http://localhost:9000", defaultPublicURL("[::1]:9000"))
	require.Equal(t, "http://0.0.0.0:8080", defaultPublicURL("0.0.0.0:8080"))
	require.Equal(t, "http://cairn.lan:8080", defaultPublicURL("cairn.lan:8080"))
}

func TestHTTPSSettings(t *testing.T) {
	for _, k := range []string{"CAIRN_HTTP_ADDR", "CAIRN_HTTPS_ADDR", "CAIRN_PUBLIC_URL", "CAIRN_TLS_HOSTNAMES", "CAIRN_ALLOW_PLAIN_HTTP", "CAIRN_TLS_CERT_FILE", "CAIRN_TLS_KEY_FILE"} {
		t.Setenv(k, "")
	}
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8443", c.HTTPSAddr)
	require.Equal(t, "https://localhost:8443", c.httpsURL())
	require.Equal(t, []string{"localhost"}, c.tlsHostnames())
	require.NoError(t, c.checkPlainHTTP())

	t.Setenv("CAIRN_HTTPS_ADDR", "off")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Empty(t, c.HTTPSAddr)

	t.Setenv("CAIRN_HTTPS_ADDR", "0.0.0.0:443")
	t.Setenv("CAIRN_PUBLIC_URL", "https://rmm.example.test")
	t.Setenv("CAIRN_TLS_HOSTNAMES", " rmm, 10.0.0.5 ,,")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, "https://rmm.example.test:443", c.httpsURL())
	require.Equal(t, []string{"rmm.example.test", "rmm", "10.0.0.5"}, c.tlsHostnames())

	_, err = loadTestConfig(t, "-https-addr", "8443")
	require.ErrorContains(t, err, "https-addr")
}

// Plain HTTP only on loopback, unless a TLS-terminating proxy is in front.
func TestPlainHTTPOnlyOnLoopback(t *testing.T) {
	t.Setenv("CAIRN_ALLOW_PLAIN_HTTP", "")
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:8080": true, "localhost:8080": true, "127.0.0.2:8080": true,
		"0.0.0.0:8080": false, ":8080": false, "[::]:8080": false, "10.0.0.5:8080": false, "cairn.lan:8080": false,
	} {
		c, err := loadTestConfig(t, "-http-addr", addr)
		require.NoError(t, err)
		if ok {
			require.NoError(t, c.checkPlainHTTP(), addr)
			continue
		}
		require.ErrorContains(t, c.checkPlainHTTP(), "CAIRN_ALLOW_PLAIN_HTTP=1", addr)
		c, err = loadTestConfig(t, "-http-addr", addr, "-allow-plain-http")
		require.NoError(t, err)
		require.NoError(t, c.checkPlainHTTP(), addr)
	}
	t.Setenv("CAIRN_ALLOW_PLAIN_HTTP", "1")
	c, err := loadTestConfig(t, "-http-addr", "0.0.0.0:8080")
	require.NoError(t, err)
	require.NoError(t, c.checkPlainHTTP())
}

// The online window takes a duration or whole seconds, within bounds.
func TestDeviceOnlineWindowSetting(t *testing.T) {
	t.Setenv("CAIRN_DEVICE_ONLINE_WINDOW", "")
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, 90*time.Second, c.DeviceOnlineWindow)

	for in, want := range map[string]time.Duration{"2m": 2 * time.Minute, "45": 45 * time.Second, "30s": 30 * time.Second, "24h": 24 * time.Hour} {
		t.Setenv("CAIRN_DEVICE_ONLINE_WINDOW", in)
		c, err := loadTestConfig(t)
		require.NoError(t, err, in)
		require.Equal(t, want, c.DeviceOnlineWindow, in)
	}
	for _, bad := range []string{"29s", "0", "-90", "25h", "soon"} {
		t.Setenv("CAIRN_DEVICE_ONLINE_WINDOW", bad)
		_, err := loadTestConfig(t)
		require.ErrorContains(t, err, "CAIRN_DEVICE_ONLINE_WINDOW", bad)
	}
	t.Setenv("CAIRN_DEVICE_ONLINE_WINDOW", "")
	c, err = loadTestConfig(t, "-device-online-window", "120s")
	require.NoError(t, err)
	require.Equal(t, 2*time.Minute, c.DeviceOnlineWindow)
}

func TestTrustedProxiesAreCIDRs(t *testing.T) {
	t.Setenv("CAIRN_TRUSTED_PROXIES", "")
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.Empty(t, c.TrustedProxies)

	t.Setenv("CAIRN_TRUSTED_PROXIES", " 10.0.0.0/8, 192.0.2.7 ,fd00::/8,")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	var got []string
	for _, p := range c.TrustedProxies {
		got = append(got, p.String())
	}
	require.Equal(t, []string{"10.0.0.0/8", "192.0.2.7/32", "fd00::/8"}, got)

	t.Setenv("CAIRN_TRUSTED_PROXIES", "10.0.0.0/8,proxy.lan")
	_, err = loadTestConfig(t)
	require.ErrorContains(t, err, "CAIRN_TRUSTED_PROXIES")
	require.ErrorContains(t, err, `"proxy.lan"`)
}

// Session lifetimes default to 30 minutes idle and 12 hours absolute, come
// from the environment or flags, and are bounded (idle never beyond max).
func TestSessionLifetimeSettings(t *testing.T) {
	t.Setenv("CAIRN_SESSION_IDLE_TIMEOUT", "")
	t.Setenv("CAIRN_SESSION_MAX_AGE", "")
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, 30*time.Minute, c.SessionIdle)
	require.Equal(t, 12*time.Hour, c.SessionMax)

	t.Setenv("CAIRN_SESSION_IDLE_TIMEOUT", "15m")
	t.Setenv("CAIRN_SESSION_MAX_AGE", "8h")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, 15*time.Minute, c.SessionIdle)
	require.Equal(t, 8*time.Hour, c.SessionMax)
	c, err = loadTestConfig(t, "-session-idle-timeout", "1h", "-session-max-age", "720h")
	require.NoError(t, err)
	require.Equal(t, time.Hour, c.SessionIdle)
	require.Equal(t, 30*24*time.Hour, c.SessionMax)

	for _, bad := range []struct{ idle, max, name string }{
		{"59s", "12h", "CAIRN_SESSION_IDLE_TIMEOUT"},
		{"25h", "48h", "CAIRN_SESSION_IDLE_TIMEOUT"},
		{"soon", "12h", "CAIRN_SESSION_IDLE_TIMEOUT"},
		{"30m", "59m", "CAIRN_SESSION_MAX_AGE"},
		{"30m", "721h", "CAIRN_SESSION_MAX_AGE"},
		{"30m", "-1h", "CAIRN_SESSION_MAX_AGE"},
		{"3h", "2h", "must not exceed"},
	} {
		t.Setenv("CAIRN_SESSION_IDLE_TIMEOUT", bad.idle)
		t.Setenv("CAIRN_SESSION_MAX_AGE", bad.max)
		_, err := loadTestConfig(t)
		require.ErrorContains(t, err, bad.name, "%s/%s", bad.idle, bad.max)
	}
}

// The pool settings (issue 13 item 18): defaults sized for the workload,
// environment and flags override them, out-of-range values are refused.
func TestDatabasePoolSettings(t *testing.T) {
	for _, name := range []string{"CAIRN_DB_MAX_CONNS", "CAIRN_DB_ACQUIRE_TIMEOUT", "CAIRN_DB_STATEMENT_TIMEOUT"} {
		t.Setenv(name, "")
	}
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.GreaterOrEqual(t, c.DBPool.MaxConns, 16)
	require.Equal(t, 5*time.Second, c.DBPool.AcquireTimeout)
	require.Equal(t, 30*time.Second, c.DBPool.StatementTimeout)

	t.Setenv("CAIRN_DB_MAX_CONNS", "40")
	t.Setenv("CAIRN_DB_ACQUIRE_TIMEOUT", "250ms")
	t.Setenv("CAIRN_DB_STATEMENT_TIMEOUT", "2m")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, 40, c.DBPool.MaxConns)
	require.Equal(t, 250*time.Millisecond, c.DBPool.AcquireTimeout)
	require.Equal(t, 2*time.Minute, c.DBPool.StatementTimeout)
	c, err = loadTestConfig(t, "-db-max-conns", "8")
	require.NoError(t, err)
	require.Equal(t, 8, c.DBPool.MaxConns)

	for name, bad := range map[string]string{"CAIRN_DB_MAX_CONNS": "0", "CAIRN_DB_ACQUIRE_TIMEOUT": "1ms", "CAIRN_DB_STATEMENT_TIMEOUT": "soon"} {
		t.Setenv(name, bad)
		_, err := loadTestConfig(t)
		require.ErrorContains(t, err, name, bad)
		t.Setenv(name, "")
	}
	_, err = loadTestConfig(t, "-db-max-conns", "5000")
	require.ErrorContains(t, err, "CAIRN_DB_MAX_CONNS")
}

func TestLogAndMetricsSettings(t *testing.T) {
	for _, k := range []string{"CAIRN_LOG_FORMAT", "CAIRN_METRICS_PUBLIC", "CAIRN_METRICS_ADDR", "CAIRN_METRICS_TOKEN_FILE"} {
		t.Setenv(k, "")
	}
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, "json", c.LogFormat, "JSON lines by default")
	require.Empty(t, c.MetricsAddr, "no metrics listener by default")
	require.Empty(t, c.MetricsToken)

	t.Setenv("CAIRN_LOG_FORMAT", "logfmt")
	_, err = loadTestConfig(t)
	require.ErrorContains(t, err, "CAIRN_LOG_FORMAT")
	t.Setenv("CAIRN_LOG_FORMAT", "text")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, "text", c.LogFormat)
}

// The log file sink: <data-dir>/logs by default, a directory of choice,
// or off; its rotation bounds come from the environment and are checked.
func TestLogFileSettings(t *testing.T) {
	for _, k := range []string{"CAIRN_LOG_DIR", "CAIRN_LOG_MAX_MB", "CAIRN_LOG_MAX_FILES"} {
		t.Setenv(k, "")
	}
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(c.DataDir, "logs"), c.logDir())
	require.Equal(t, 50, c.LogMaxMB)
	require.Equal(t, 5, c.LogMaxFiles)

	dir := t.TempDir()
	t.Setenv("CAIRN_LOG_DIR", dir)
	t.Setenv("CAIRN_LOG_MAX_MB", "10")
	t.Setenv("CAIRN_LOG_MAX_FILES", "2")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, dir, c.logDir())
	require.Equal(t, 10, c.LogMaxMB)
	require.Equal(t, 2, c.LogMaxFiles)
	log, closeLog, err := newProcessLogger(c, "engine")
	require.NoError(t, err)
	log.Info("to the file", "password", "hunter2-config")
	closeLog()
	raw, err := os.ReadFile(filepath.Join(dir, "engine.log"))
	require.NoError(t, err)
	require.Contains(t, string(raw), `"msg":"to the file"`)
	require.NotContains(t, string(raw), "hunter2-config")

	t.Setenv("CAIRN_LOG_DIR", "off")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Empty(t, c.logDir())

	t.Setenv("CAIRN_LOG_MAX_MB", "0")
	_, err = loadTestConfig(t)
	require.ErrorContains(t, err, "CAIRN_LOG_MAX_MB")

	// A worker's file is named by its sites.
	require.Equal(t, "worker-branch-hq", workerLogSource([]string{"hq", "branch"}))
	long := workerLogSource([]string{strings.Repeat("a", 51), strings.Repeat("b", 51)})
	require.Regexp(t, `^worker-[0-9a-f]{12}$`, long)
}

// File transfer limits default to 4 GiB and 24 hours, come from the
// environment or flags, and are bounded.
func TestTransferLimitSettings(t *testing.T) {
	t.Setenv("CAIRN_TRANSFER_MAX_BYTES", "")
	t.Setenv("CAIRN_TRANSFER_RETENTION", "")
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, int64(4<<30), c.TransferMaxBytes)
	require.Equal(t, 24*time.Hour, c.TransferRetention)

	t.Setenv("CAIRN_TRANSFER_MAX_BYTES", "1073741824")
	t.Setenv("CAIRN_TRANSFER_RETENTION", "2h")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, int64(1<<30), c.TransferMaxBytes)
	require.Equal(t, 2*time.Hour, c.TransferRetention)
	c, err = loadTestConfig(t, "-transfer-max-bytes", "2097152", "-transfer-retention", "72h")
	require.NoError(t, err)
	require.Equal(t, int64(2<<20), c.TransferMaxBytes)
	require.Equal(t, 72*time.Hour, c.TransferRetention)

	for _, bad := range []struct{ size, retention, name string }{
		{"1000", "24h", "CAIRN_TRANSFER_MAX_BYTES"},
		{"4GiB", "24h", "CAIRN_TRANSFER_MAX_BYTES"},
		{"2097152", "30s", "CAIRN_TRANSFER_RETENTION"},
		{"2097152", "721h", "CAIRN_TRANSFER_RETENTION"},
		{"2097152", "a day", "CAIRN_TRANSFER_RETENTION"},
	} {
		t.Setenv("CAIRN_TRANSFER_MAX_BYTES", bad.size)
		t.Setenv("CAIRN_TRANSFER_RETENTION", bad.retention)
		_, err := loadTestConfig(t)
		require.ErrorContains(t, err, bad.name, "%s/%s", bad.size, bad.retention)
	}
}

// Transfer quotas: defaults that leave today's use alone (a budget of 16
// largest transfers, 256 live transfers, 64 an operator's, 1 GiB of
// headroom on the private cluster's directory), each setting by
// environment or flag, and bad values refused by name.
func TestTransferQuotaSettings(t *testing.T) {
	names := []string{"CAIRN_TRANSFER_MAX_BYTES", "CAIRN_TRANSFER_QUOTA_BYTES", "CAIRN_TRANSFER_OPERATOR_QUOTA_BYTES",
		"CAIRN_TRANSFER_MAX_CONCURRENT", "CAIRN_TRANSFER_OPERATOR_MAX_CONCURRENT", "CAIRN_TRANSFER_MIN_FREE_BYTES",
		"CAIRN_TRANSFER_STAGING_PATH", "DATABASE_URL", "CAIRN_DATA_DIR"}
	unset := func() {
		for _, n := range names {
			t.Setenv(n, "")
		}
	}
	unset()
	dataDir := t.TempDir()
	t.Setenv("CAIRN_DATA_DIR", dataDir)
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, transfers.Quotas{Bytes: 64 << 30, Concurrent: 256, OperatorConcurrent: 64, MinFreeBytes: 1 << 30,
		StagingPath: filepath.Join(dataDir, "postgres")}, c.TransferQuotas)

	// an external PostgreSQL: no path to check unless one is named
	t.Setenv("DATABASE_URL", "postgres://db.example/cairn")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Empty(t, c.TransferQuotas.StagingPath)
	staging := t.TempDir()
	t.Setenv("CAIRN_TRANSFER_STAGING_PATH", staging)
	t.Setenv("CAIRN_TRANSFER_MAX_BYTES", "1048576")
	t.Setenv("CAIRN_TRANSFER_QUOTA_BYTES", "0")
	t.Setenv("CAIRN_TRANSFER_OPERATOR_QUOTA_BYTES", "2097152")
	t.Setenv("CAIRN_TRANSFER_MAX_CONCURRENT", "0")
	t.Setenv("CAIRN_TRANSFER_OPERATOR_MAX_CONCURRENT", "3")
	t.Setenv("CAIRN_TRANSFER_MIN_FREE_BYTES", "0")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, transfers.Quotas{OperatorBytes: 2 << 20, OperatorConcurrent: 3, StagingPath: staging}, c.TransferQuotas)
	c, err = loadTestConfig(t, "-transfer-quota-bytes", "8388608", "-transfer-operator-quota-bytes", "4194304",
		"-transfer-max-concurrent", "10", "-transfer-operator-max-concurrent", "10", "-transfer-min-free-bytes", "5")
	require.NoError(t, err)
	require.Equal(t, transfers.Quotas{Bytes: 8 << 20, OperatorBytes: 4 << 20, Concurrent: 10, OperatorConcurrent: 10,
		MinFreeBytes: 5, StagingPath: staging}, c.TransferQuotas)
	// the default budget follows the largest transfer
	c, err = loadTestConfig(t, "-transfer-quota-bytes", "", "-transfer-max-bytes", "2097152")
	require.NoError(t, err)
	require.Equal(t, int64(32<<20), c.TransferQuotas.Bytes)

	for _, bad := range []struct{ name, value, want string }{
		{"CAIRN_TRANSFER_QUOTA_BYTES", "-1", "CAIRN_TRANSFER_QUOTA_BYTES"},
		{"CAIRN_TRANSFER_QUOTA_BYTES", "64GiB", "CAIRN_TRANSFER_QUOTA_BYTES"},
		{"CAIRN_TRANSFER_QUOTA_BYTES", "1048575", "CAIRN_TRANSFER_QUOTA_BYTES"}, // below one largest transfer
		{"CAIRN_TRANSFER_QUOTA_BYTES", "1125899906842625", "CAIRN_TRANSFER_QUOTA_BYTES"},
		{"CAIRN_TRANSFER_OPERATOR_QUOTA_BYTES", "1000", "CAIRN_TRANSFER_OPERATOR_QUOTA_BYTES"},
		{"CAIRN_TRANSFER_OPERATOR_QUOTA_BYTES", "16777216", "must not exceed"}, // above the Engine's 8 MiB
		{"CAIRN_TRANSFER_MAX_CONCURRENT", "-3", "CAIRN_TRANSFER_MAX_CONCURRENT"},
		{"CAIRN_TRANSFER_MAX_CONCURRENT", "100001", "CAIRN_TRANSFER_MAX_CONCURRENT"},
		{"CAIRN_TRANSFER_OPERATOR_MAX_CONCURRENT", "many", "CAIRN_TRANSFER_OPERATOR_MAX_CONCURRENT"},
		{"CAIRN_TRANSFER_OPERATOR_MAX_CONCURRENT", "20", "must not exceed"}, // above the Engine's 10
		{"CAIRN_TRANSFER_MIN_FREE_BYTES", "1G", "CAIRN_TRANSFER_MIN_FREE_BYTES"},
		{"CAIRN_TRANSFER_MIN_FREE_BYTES", "-1", "CAIRN_TRANSFER_MIN_FREE_BYTES"},
		{"CAIRN_TRANSFER_STAGING_PATH", filepath.Join(staging, "missing"), "CAIRN_TRANSFER_STAGING_PATH"},
	} {
		unset()
		t.Setenv("CAIRN_TRANSFER_MAX_BYTES", "1048576")
		t.Setenv("CAIRN_TRANSFER_QUOTA_BYTES", "8388608")
		t.Setenv("CAIRN_TRANSFER_MAX_CONCURRENT", "10")
		t.Setenv("CAIRN_TRANSFER_OPERATOR_MAX_CONCURRENT", "5")
		t.Setenv(bad.name, bad.value)
		_, err := loadTestConfig(t)
		require.ErrorContains(t, err, bad.want, "%s=%s", bad.name, bad.value)
	}
}

// Shell transcripts are capped at 64 MiB by default and record input
// unless CAIRN_SHELL_RECORD_INPUT=0; both are checked.
func TestShellTranscriptSettings(t *testing.T) {
	t.Setenv("CAIRN_SHELL_TRANSCRIPT_MAX_BYTES", "")
	t.Setenv("CAIRN_SHELL_RECORD_INPUT", "")
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, int64(64<<20), c.ShellTranscriptMax)
	require.False(t, c.ShellNoInputRecording)

	t.Setenv("CAIRN_SHELL_TRANSCRIPT_MAX_BYTES", "1048576")
	t.Setenv("CAIRN_SHELL_RECORD_INPUT", "0")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, int64(1<<20), c.ShellTranscriptMax)
	require.True(t, c.ShellNoInputRecording)
	c, err = loadTestConfig(t, "-shell-transcript-max-bytes", "2097152", "-shell-record-input", "1")
	require.NoError(t, err)
	require.Equal(t, int64(2<<20), c.ShellTranscriptMax)
	require.False(t, c.ShellNoInputRecording)

	for _, bad := range []struct{ size, input, name string }{
		{"1000", "1", "CAIRN_SHELL_TRANSCRIPT_MAX_BYTES"},
		{"64MiB", "1", "CAIRN_SHELL_TRANSCRIPT_MAX_BYTES"},
		{"1048576", "yes", "CAIRN_SHELL_RECORD_INPUT"},
	} {
		t.Setenv("CAIRN_SHELL_TRANSCRIPT_MAX_BYTES", bad.size)
		t.Setenv("CAIRN_SHELL_RECORD_INPUT", bad.input)
		_, err := loadTestConfig(t)
		require.ErrorContains(t, err, bad.name)
	}
}

// The managed WireGuard tunnel's settings (issue 23): defaults, values,
// and every bad one refused naming its variable.
func TestWireGuardSettings(t *testing.T) {
	for _, k := range []string{"CAIRN_WIREGUARD_PORT", "CAIRN_WIREGUARD_ENDPOINT", "CAIRN_WIREGUARD_FALLBACK_IP", "CAIRN_WIREGUARD_NETWORK"} {
		t.Setenv(k, "")
	}
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, 51820, c.Tunnels.Port)
	require.Equal(t, "10.213.0.0/16", c.Tunnels.Network.String())
	require.False(t, c.Tunnels.FallbackIP.IsValid())

	t.Setenv("CAIRN_WIREGUARD_PORT", "51999")
	t.Setenv("CAIRN_WIREGUARD_ENDPOINT", "vpn.example.com:443")
	t.Setenv("CAIRN_WIREGUARD_FALLBACK_IP", "192.0.2.7")
	t.Setenv("CAIRN_WIREGUARD_NETWORK", "10.50.0.0/20")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, 51999, c.Tunnels.Port)
	require.Equal(t, "vpn.example.com:443", c.Tunnels.Endpoint)
	require.Equal(t, "192.0.2.7", c.Tunnels.FallbackIP.String())
	require.Equal(t, "10.50.0.0/20", c.Tunnels.Network.String())

	for _, bad := range []struct{ name, value string }{
		{"CAIRN_WIREGUARD_PORT", "0"},
		{"CAIRN_WIREGUARD_PORT", "udp"},
		{"CAIRN_WIREGUARD_ENDPOINT", "vpn.example.com"},
		{"CAIRN_WIREGUARD_FALLBACK_IP", "127.0.0.1"},
		{"CAIRN_WIREGUARD_FALLBACK_IP", "vpn.example.com"},
		{"CAIRN_WIREGUARD_NETWORK", "fd00::/64"},
		{"CAIRN_WIREGUARD_NETWORK", "10.0.0.0/31"},
	} {
		t.Setenv("CAIRN_WIREGUARD_PORT", "51999")
		t.Setenv("CAIRN_WIREGUARD_ENDPOINT", "")
		t.Setenv("CAIRN_WIREGUARD_FALLBACK_IP", "")
		t.Setenv("CAIRN_WIREGUARD_NETWORK", "")
		t.Setenv(bad.name, bad.value)
		_, err := loadTestConfig(t)
		require.ErrorContains(t, err, bad.name, bad.value)
	}
}

// The SERVICE_VNC_* settings are read with the rest of the configuration:
// a bad one stops the start with its name.
func TestVNCSettings(t *testing.T) {
	t.Setenv("SERVICE_VNC_ESTABLISH_DEADLINE_SECONDS", "")
	t.Setenv("SERVICE_VNC_SECURITY_PREFLIGHT", "")
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, vnc.DefaultConfig(), c.VNC)

	t.Setenv("SERVICE_VNC_ESTABLISH_DEADLINE_SECONDS", "40")
	t.Setenv("SERVICE_VNC_SECURITY_PREFLIGHT", "0")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, 40*time.Second, c.VNC.EstablishDeadline)
	require.False(t, c.VNC.Preflight)

	t.Setenv("SERVICE_VNC_ESTABLISH_DEADLINE_SECONDS", "90")
	_, err = loadTestConfig(t)
	require.ErrorContains(t, err, "SERVICE_VNC_ESTABLISH_DEADLINE_SECONDS")
}

// The embedded Temporal keeps its state in SQLite unless told to use the
// Engine's PostgreSQL; anything else is refused before anything starts.
func TestTemporalStoreSetting(t *testing.T) {
	t.Setenv("CAIRN_TEMPORAL_STORE", "")
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, "sqlite", c.TemporalStore)

	t.Setenv("CAIRN_TEMPORAL_STORE", "postgres")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, "postgres", c.TemporalStore)

	c, err = loadTestConfig(t, "--temporal-store", "sqlite")
	require.NoError(t, err)
	require.Equal(t, "sqlite", c.TemporalStore)

	t.Setenv("CAIRN_TEMPORAL_STORE", "mysql")
	_, err = loadTestConfig(t)
	require.ErrorContains(t, err, "CAIRN_TEMPORAL_STORE")
	require.ErrorContains(t, err, `"mysql"`)
}
