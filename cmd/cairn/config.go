package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/logs"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
	"github.com/cairn-rmm/cairn/internal/shells"
	"github.com/cairn-rmm/cairn/internal/transfers"
	"github.com/cairn-rmm/cairn/internal/tunnels"
	"github.com/cairn-rmm/cairn/internal/vnc"
)

// config is the Engine's configuration: environment variables, overridable
// by flags of the same meaning. docs/operations.md lists them.
type config struct {
	DatabaseURL       string
	TemporalAddress   string
	TemporalNamespace string
	// Temporal is how the Engine reaches TEMPORAL_ADDRESS: TLS, client
	// certificate, API key (temporalconn.go).
	Temporal temporalConn
	// TemporalUICodecEndpoint is the codec server the embedded Temporal UI
	// asks to decode payloads ("" for none).
	TemporalUICodecEndpoint string
	HTTPAddr                string
	// HTTPSAddr is where the Engine serves HTTPS ("" when off).
	HTTPSAddr string
	// AllowPlainHTTP lets HTTPAddr be a non-loopback address, for a
	// deployment behind a TLS-terminating proxy.
	AllowPlainHTTP bool
	// TLSHostnames are names the local CA's certificate covers besides the
	// public URL's host and the loopback names.
	TLSHostnames []string
	// TLSCertFile and TLSKeyFile are a provided certificate (no local CA).
	TLSCertFile, TLSKeyFile string
	PublicURL               string
	// ApprovalTTL is how long an enrollment request waits for a decision.
	ApprovalTTL time.Duration
	// EnrollRateLimit is how many enrollment requests one address may make
	// in 10 minutes.
	EnrollRateLimit int
	// ProofRateLimit is how many DPoP proofs without an access token (token
	// refreshes, enrollment polls) one address may present per minute.
	ProofRateLimit int
	// ScheduledCapacity is the slots of each site worker's scheduled lane.
	ScheduledCapacity int
	DataDir           string
	TemporalPort      int
	TemporalUIPort    int
	// TemporalStore is where the embedded Temporal keeps its state:
	// sqlite (<data-dir>/temporal.sqlite) or postgres (databases beside
	// the Engine's on its PostgreSQL server).
	TemporalStore string
	// TemporalUIOrigins are Temporal UI origins that may read the codec
	// server's answers (CORS); the embedded UI's are added by serve.
	TemporalUIOrigins []string
	LogLevel          slog.Level
	// LogFormat is json (the default, for log shippers) or text.
	LogFormat string
	// LogDir holds the rotating JSON log files GET /api/server/logs reads
	// (CAIRN_LOG_DIR, default <data-dir>/logs; "off": stderr only), each
	// at most LogMaxMB, LogMaxFiles rotated ones kept.
	LogDir      string
	LogMaxMB    int
	LogMaxFiles int
	// MetricsAddr is the listener that alone serves /metrics ("" when
	// off); MetricsToken, read from CAIRN_METRICS_TOKEN_FILE, is the
	// bearer token a scrape must carry there ("" for none).
	MetricsAddr  string
	MetricsToken string
	// Pprof serves the Go profiler (/debug/pprof/) on the metrics
	// listener too, behind its token (CAIRN_PPROF; docs/benchmarks.md).
	Pprof          bool
	SiteWorkers    string // all | none
	PassphraseFile string
	GitHubAPIURL   string
	// GitHubToken is read from the environment only: a flag would show it
	// in the process list.
	GitHubToken string
	// DeviceOnlineWindow is how long after its last heartbeat a device
	// still counts as online.
	DeviceOnlineWindow time.Duration
	// AgentArtifacts is the directory of agent builds the Engine serves
	// (<platform>/cairn-agent[.exe] and .build-id sidecars).
	AgentArtifacts string
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client address (CAIRN_TRUSTED_PROXIES).
	TrustedProxies []netip.Prefix
	// SessionIdle ends an operator session unused this long; SessionMax
	// ends it this long after sign-in whatever its use.
	SessionIdle time.Duration
	SessionMax  time.Duration
	// DBPool sizes the PostgreSQL pool and bounds its waits.
	DBPool db.PoolConfig
	// TransferMaxBytes bounds one file transfer (an upload's files
	// together, or a download's artifact); TransferRetention keeps a
	// download's content after the transfer ended.
	TransferMaxBytes  int64
	TransferRetention time.Duration
	// TransferQuotas bound what transfers hold at once: the staging
	// budgets, the concurrency caps and the disk headroom
	// (CAIRN_TRANSFER_QUOTA_BYTES and its siblings, parseTransferQuotas).
	TransferQuotas transfers.Quotas
	// ShellTranscriptMax caps one shell session's transcript (reaching it
	// ends the session); ShellNoInputRecording leaves operators'
	// keystrokes out of transcripts.
	ShellTranscriptMax    int64
	ShellNoInputRecording bool
	// Tunnels are the managed WireGuard tunnel's port, endpoint, fallback
	// IP and network (CAIRN_WIREGUARD_*, parseTunnels).
	Tunnels tunnels.Config
	// GatewayURL is a `cairn gateway` listener (CAIRN_GATEWAY_URL): the
	// WireGuard and the remote-desktop gateway run there, not here.
	GatewayURL string
	// VNC are the remote desktop's SERVICE_VNC_* settings, checked when
	// the configuration is read (a bad value stops the start with its
	// name) rather than when the Engine is built.
	VNC vnc.Config
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) (int, error) {
	v := env(name, "")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 65535 {
		return 0, fmt.Errorf("%s must be a port number (0 to 65535), got %q", name, v)
	}
	return n, nil
}

// envCount reads a positive integer.
func envCount(name string, def int) (int, error) {
	v := env(name, "")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s must be a positive integer, got %q", name, v)
	}
	return n, nil
}

// envDuration reads a positive Go duration ("72h", "90s").
func envDuration(name string, def time.Duration) (time.Duration, error) {
	v := env(name, "")
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s must be a positive duration such as 90s or 72h, got %q", name, v)
	}
	return d, nil
}

// The embedded Temporal's stores (config.TemporalStore).
const (
	temporalStoreSQLite   = "sqlite"
	temporalStorePostgres = "postgres"
)

// loadConfig reads the environment, then lets flags on fs override it.
func loadConfig(fs *flag.FlagSet, args []string) (config, error) {
	var c config
	var err error
	c.TemporalPort, err = envInt("CAIRN_TEMPORAL_PORT", 7233)
	if err != nil {
		return c, err
	}
	c.TemporalUIPort, err = envInt("CAIRN_TEMPORAL_UI_PORT", 8233)
	if err != nil {
		return c, err
	}
	if c.LogMaxMB, err = envInt("CAIRN_LOG_MAX_MB", logs.DefaultMaxMB); err != nil {
		return c, err
	}
	if c.LogMaxFiles, err = envInt("CAIRN_LOG_MAX_FILES", logs.DefaultMaxFiles); err != nil {
		return c, err
	}
	fs.StringVar(&c.LogDir, "log-dir", env("CAIRN_LOG_DIR", ""), "directory of the rotating JSON log files the Server page reads (default <data-dir>/logs; off: stderr only)")
	fs.IntVar(&c.LogMaxMB, "log-max-mb", c.LogMaxMB, "size of one log file before it is rotated, in MiB")
	fs.IntVar(&c.LogMaxFiles, "log-max-files", c.LogMaxFiles, "rotated log files kept besides the current one")
	fs.StringVar(&c.DatabaseURL, "database-url", env("DATABASE_URL", ""), "PostgreSQL URL; empty starts a private cluster under the data directory")
	fs.StringVar(&c.TemporalAddress, "temporal-address", env("TEMPORAL_ADDRESS", ""), "Temporal frontend host:port; empty embeds Temporal's dev server")
	fs.StringVar(&c.TemporalNamespace, "temporal-namespace", env("TEMPORAL_NAMESPACE", "default"), "Temporal namespace")
	temporalConnFlags(fs, &c.Temporal)
	fs.StringVar(&c.TemporalUICodecEndpoint, "temporal-ui-codec-endpoint", env("CAIRN_TEMPORAL_UI_CODEC_ENDPOINT", ""),
		"codec server URL the embedded Temporal UI decodes payloads with (empty: none)")
	fs.StringVar(&c.HTTPAddr, "http-addr", env("CAIRN_HTTP_ADDR", "127.0.0.1:8080"), "address the Engine listens on")
	fs.StringVar(&c.HTTPSAddr, "https-addr", env("CAIRN_HTTPS_ADDR", "127.0.0.1:8443"), "address the Engine serves HTTPS on (off disables it)")
	fs.BoolVar(&c.AllowPlainHTTP, "allow-plain-http", env("CAIRN_ALLOW_PLAIN_HTTP", "") == "1", "allow plain HTTP on a non-loopback http-addr (behind a TLS-terminating proxy only)")
	tlsHostnames := fs.String("tls-hostnames", env("CAIRN_TLS_HOSTNAMES", ""), "comma-separated extra names for the local CA's server certificate")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", env("CAIRN_TLS_CERT_FILE", ""), "PEM certificate (chain) to serve instead of the local CA's")
	fs.StringVar(&c.TLSKeyFile, "tls-key-file", env("CAIRN_TLS_KEY_FILE", ""), "PEM private key of tls-cert-file")
	approvalTTL, err := envDuration("CAIRN_ENROLLMENT_APPROVAL_TTL", 72*time.Hour)
	if err != nil {
		return c, err
	}
	enrollLimit, err := envCount("CAIRN_ENROLL_RATE_LIMIT", 30)
	if err != nil {
		return c, err
	}
	fs.IntVar(&c.EnrollRateLimit, "enroll-rate-limit", enrollLimit, "enrollment requests one address may make per 10 minutes")
	proofLimit, err := envCount("CAIRN_PROOF_RATE_LIMIT", api.DefaultProofsPerAddress.Limit)
	if err != nil {
		return c, err
	}
	fs.IntVar(&c.ProofRateLimit, "proof-rate-limit", proofLimit, "token refreshes and enrollment polls one address may make per minute")
	capacity, err := envCount("CAIRN_SITE_SCHEDULED_CAPACITY", scheduledjobs.DefaultScheduledCapacity)
	if err != nil {
		return c, err
	}
	fs.IntVar(&c.ScheduledCapacity, "site-scheduled-capacity", capacity, "scheduled jobs, workflows and agent-maintenance items one site runs at once")
	fs.DurationVar(&c.ApprovalTTL, "approval-ttl", approvalTTL, "how long an enrollment request waits for approval before it expires")
	fs.StringVar(&c.PublicURL, "public-url", env("CAIRN_PUBLIC_URL", ""), "URL operators and agents use to reach the Engine (default http://<http-addr>, with localhost for a loopback IP)")
	fs.StringVar(&c.DataDir, "data-dir", env("CAIRN_DATA_DIR", ".data"), "directory for the private PostgreSQL cluster and embedded Temporal's database")
	fs.IntVar(&c.TemporalPort, "temporal-port", c.TemporalPort, "embedded Temporal frontend port")
	fs.IntVar(&c.TemporalUIPort, "temporal-ui-port", c.TemporalUIPort, "embedded Temporal UI port (0 disables the UI)")
	fs.StringVar(&c.TemporalStore, "temporal-store", env("CAIRN_TEMPORAL_STORE", temporalStoreSQLite),
		"where the embedded Temporal keeps its state: sqlite (<data-dir>/temporal.sqlite) or postgres (<database>_temporal beside the Engine's database)")
	uiOrigins := fs.String("temporal-ui-origins", env("CAIRN_TEMPORAL_UI_ORIGINS", ""),
		"comma-separated origins of Temporal UIs that decode histories through the Engine's codec server (the embedded UI's are added)")
	level := fs.String("log-level", env("CAIRN_LOG_LEVEL", "info"), "debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", env("CAIRN_LOG_FORMAT", logs.FormatJSON), "log line format: json or text")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", env("CAIRN_METRICS_ADDR", ""),
		"host:port of a listener that serves only /metrics (Prometheus), such as 127.0.0.1:9464; empty serves no metrics")
	fs.BoolVar(&c.Pprof, "pprof", env("CAIRN_PPROF", "") == "1",
		"also serve the Go profiler at /debug/pprof/ on the metrics listener, behind its token (needs metrics-addr)")
	metricsTokenFile := fs.String("metrics-token-file", env("CAIRN_METRICS_TOKEN_FILE", ""),
		"file holding a bearer token every /metrics scrape must carry (Authorization: Bearer); empty: none")
	fs.StringVar(&c.SiteWorkers, "site-workers", env("CAIRN_SITE_WORKERS", "all"), "site workers this process runs: all or none")
	fs.StringVar(&c.PassphraseFile, "aegis-passphrase-file", env("CAIRN_AEGIS_PASSPHRASE_FILE", ""), "file holding the master-cipher passphrase, to unlock unattended at start")
	fs.StringVar(&c.GitHubAPIURL, "github-api-url", env("CAIRN_GITHUB_API_URL", "https://api.github.com"), "source-hosting API base URL (GitHub or compatible)")
	c.GitHubToken = env("CAIRN_GITHUB_TOKEN", os.Getenv("GITHUB_TOKEN"))
	fs.StringVar(&c.AgentArtifacts, "agent-artifacts", env("CAIRN_AGENT_ARTIFACTS", defaultAgentArtifacts()),
		"directory of agent builds served to agents and installers (make build fills bin/agents)")
	fs.DurationVar(&c.SessionIdle, "session-idle-timeout", 0, "an operator session unused this long ends (default 30m; env CAIRN_SESSION_IDLE_TIMEOUT)")
	fs.DurationVar(&c.SessionMax, "session-max-age", 0, "an operator session ends this long after sign-in (default 12h; env CAIRN_SESSION_MAX_AGE)")
	if err := poolFlags(fs, &c.DBPool); err != nil {
		return c, err
	}
	onlineWindow := fs.String("device-online-window", env("CAIRN_DEVICE_ONLINE_WINDOW", devices.DefaultOnlineWindow.String()),
		"how long after its last heartbeat a device counts as online (a duration such as 90s, or seconds)")
	transferMax := fs.String("transfer-max-bytes", env("CAIRN_TRANSFER_MAX_BYTES", strconv.FormatInt(transfers.DefaultMaxUpload, 10)),
		"bytes one file transfer may carry (an upload's files together, or a download's artifact)")
	transferRetention := fs.String("transfer-retention", env("CAIRN_TRANSFER_RETENTION", transfers.DefaultRetention.String()),
		"how long a download's content stays fetchable after the transfer ended (a duration such as 24h)")
	quotaFlags := transferQuotaFlags(fs)
	shellTranscriptMax := fs.String("shell-transcript-max-bytes", env("CAIRN_SHELL_TRANSCRIPT_MAX_BYTES", strconv.FormatInt(shells.DefaultTranscriptMax, 10)),
		"bytes one shell session's transcript may take; reaching it ends the session")
	shellRecordInput := fs.String("shell-record-input", env("CAIRN_SHELL_RECORD_INPUT", "1"),
		"1 records operators' keystrokes in shell transcripts (passwords typed at prompts included), 0 leaves them out")
	wgPort := fs.String("wireguard-port", env("CAIRN_WIREGUARD_PORT", strconv.Itoa(tunnels.DefaultPort)),
		"the UDP port of the Engine's WireGuard (device tunnels), bound by the replica that owns it once a tunnel exists")
	wgEndpoint := fs.String("wireguard-endpoint", env("CAIRN_WIREGUARD_ENDPOINT", ""),
		"host:port agents dial for their tunnel (default: the public URL's host and the WireGuard port)")
	wgFallback := fs.String("wireguard-fallback-ip", env("CAIRN_WIREGUARD_FALLBACK_IP", ""),
		"a non-loopback IP agents try, on the same port, when the endpoint gives no handshake within 8 s")
	wgNetwork := fs.String("wireguard-network", env("CAIRN_WIREGUARD_NETWORK", tunnels.DefaultNetwork),
		"the IPv4 network of tunnel addresses; the Engine's is its first")
	gatewayURL := fs.String("gateway-url", env("CAIRN_GATEWAY_URL", ""),
		"the listener of a `cairn gateway` process that holds the WireGuard and the remote-desktop gateway (this process then binds no WireGuard)")
	trustedProxies := fs.String("trusted-proxies", env("CAIRN_TRUSTED_PROXIES", ""),
		"comma-separated CIDRs (or addresses) of reverse proxies whose X-Forwarded-For names the client address")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.TrustedProxies, err = parseTrustedProxies(*trustedProxies); err != nil {
		return c, err
	}
	if c.TemporalStore != temporalStoreSQLite && c.TemporalStore != temporalStorePostgres {
		return c, fmt.Errorf("temporal-store (CAIRN_TEMPORAL_STORE) must be %s or %s, got %q", temporalStoreSQLite, temporalStorePostgres, c.TemporalStore)
	}
	if c.DeviceOnlineWindow, err = parseOnlineWindow(*onlineWindow); err != nil {
		return c, err
	}
	if err := c.loadSessionLifetimes(); err != nil {
		return c, err
	}
	if c.TransferMaxBytes, c.TransferRetention, err = parseTransferLimits(*transferMax, *transferRetention); err != nil {
		return c, err
	}
	if c.ShellTranscriptMax, c.ShellNoInputRecording, err = parseShellTranscripts(*shellTranscriptMax, *shellRecordInput); err != nil {
		return c, err
	}
	if c.Tunnels, err = parseTunnels(*wgPort, *wgEndpoint, *wgFallback, *wgNetwork); err != nil {
		return c, err
	}
	if c.VNC, err = vnc.ConfigFromEnv(os.Getenv); err != nil {
		return c, err
	}
	if *gatewayURL != "" {
		if u, err := url.Parse(*gatewayURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, fmt.Errorf("gateway-url (CAIRN_GATEWAY_URL) must be an http or https URL, got %q", *gatewayURL)
		}
		c.GatewayURL = *gatewayURL
	}
	if err := checkPool(c.DBPool); err != nil {
		return c, err
	}
	if err := c.Temporal.check(c.TemporalAddress); err != nil {
		return c, err
	}
	if c.TemporalUICodecEndpoint != "" {
		if u, err := url.Parse(c.TemporalUICodecEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, fmt.Errorf("temporal-ui-codec-endpoint (CAIRN_TEMPORAL_UI_CODEC_ENDPOINT) must be an http(s) URL, got %q", c.TemporalUICodecEndpoint)
		}
	}
	if err := c.LogLevel.UnmarshalText([]byte(*level)); err != nil {
		return c, fmt.Errorf("log level: %w", err)
	}
	if c.LogFormat != logs.FormatJSON && c.LogFormat != logs.FormatText {
		return c, fmt.Errorf("log-format (CAIRN_LOG_FORMAT) must be json or text, got %q", c.LogFormat)
	}
	if env("CAIRN_METRICS_PUBLIC", "") != "" {
		return c, errMetricsPublicRemoved
	}
	if err := checkMetricsAddr(c.MetricsAddr); err != nil {
		return c, err
	}
	if c.MetricsToken, err = readMetricsToken(*metricsTokenFile, c.MetricsAddr); err != nil {
		return c, err
	}
	if c.Pprof && c.MetricsAddr == "" {
		return c, errors.New("pprof (CAIRN_PPROF) is served on the metrics listener, but metrics-addr (CAIRN_METRICS_ADDR) is empty: set both or neither")
	}
	if c.SiteWorkers != "all" && c.SiteWorkers != "none" {
		return c, fmt.Errorf("site-workers must be all or none, got %q", c.SiteWorkers)
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		return c, fmt.Errorf("http-addr: %w", err)
	}
	if c.HTTPSAddr == "off" {
		c.HTTPSAddr = ""
	} else if _, _, err := net.SplitHostPort(c.HTTPSAddr); err != nil {
		return c, fmt.Errorf("https-addr: %w (or off)", err)
	}
	for _, n := range strings.Split(*tlsHostnames, ",") {
		if n = strings.TrimSpace(n); n != "" {
			c.TLSHostnames = append(c.TLSHostnames, n)
		}
	}
	for _, o := range strings.Split(*uiOrigins, ",") {
		if o = strings.TrimRight(strings.TrimSpace(o), "/"); o == "" {
			continue
		}
		if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" {
			return c, fmt.Errorf("temporal-ui-origins: %q is not an origin such as https://temporal.example.com", o)
		}
		c.TemporalUIOrigins = append(c.TemporalUIOrigins, o)
	}
	if u, err := url.Parse(c.GitHubAPIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("github-api-url must be an http(s) URL, got %q", c.GitHubAPIURL)
	}
	if c.PublicURL == "" {
		c.PublicURL = defaultPublicURL(c.HTTPAddr)
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.LogMaxMB < 1 || c.LogMaxFiles < 1 {
		return c, fmt.Errorf("log-max-mb (CAIRN_LOG_MAX_MB) and log-max-files (CAIRN_LOG_MAX_FILES) must be at least 1")
	}
	if c.DataDir, err = filepath.Abs(c.DataDir); err != nil {
		return c, err
	}
	if c.TransferQuotas, err = quotaFlags.parse(c.TransferMaxBytes, c.DatabaseURL, c.DataDir); err != nil {
		return c, err
	}
	if c.AgentArtifacts != "" {
		if c.AgentArtifacts, err = filepath.Abs(c.AgentArtifacts); err != nil {
			return c, err
		}
	}
	return c, nil
}

// Pool bounds: beyond 1000 connections PostgreSQL's own limits bite first.
const maxDBConns = 1000

// poolFlags reads CAIRN_DB_MAX_CONNS, CAIRN_DB_ACQUIRE_TIMEOUT and
// CAIRN_DB_STATEMENT_TIMEOUT into flags of the same meaning.
func poolFlags(fs *flag.FlagSet, pc *db.PoolConfig) error {
	conns, err := envCount("CAIRN_DB_MAX_CONNS", db.DefaultMaxConns())
	if err != nil {
		return err
	}
	acquire, err := envDuration("CAIRN_DB_ACQUIRE_TIMEOUT", db.DefaultAcquireTimeout)
	if err != nil {
		return err
	}
	statement, err := envDuration("CAIRN_DB_STATEMENT_TIMEOUT", db.DefaultStatementTimeout)
	if err != nil {
		return err
	}
	fs.IntVar(&pc.MaxConns, "db-max-conns", conns, "PostgreSQL connections this process may hold")
	fs.DurationVar(&pc.AcquireTimeout, "db-acquire-timeout", acquire, "how long a request waits for a free connection before 503 service_unavailable")
	fs.DurationVar(&pc.StatementTimeout, "db-statement-timeout", statement, "PostgreSQL statement_timeout of the Engine's connections")
	return nil
}

// checkPool validates the pool settings after flags override them.
func checkPool(pc db.PoolConfig) error {
	if pc.MaxConns < 1 || pc.MaxConns > maxDBConns {
		return fmt.Errorf("db-max-conns (CAIRN_DB_MAX_CONNS) must be from 1 to %d, got %d", maxDBConns, pc.MaxConns)
	}
	if pc.AcquireTimeout < 10*time.Millisecond || pc.AcquireTimeout > 5*time.Minute {
		return fmt.Errorf("db-acquire-timeout (CAIRN_DB_ACQUIRE_TIMEOUT) must be from 10ms to 5m, got %s", pc.AcquireTimeout)
	}
	if pc.StatementTimeout < time.Second || pc.StatementTimeout > time.Hour {
		return fmt.Errorf("db-statement-timeout (CAIRN_DB_STATEMENT_TIMEOUT) must be from 1s to 1h, got %s", pc.StatementTimeout)
	}
	return nil
}

// defaultAgentArtifacts is "agents" next to the cairn binary: bin/agents
// for bin/cairn as make builds them ("" when the binary cannot be found).
func defaultAgentArtifacts() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return filepath.Join(filepath.Dir(exe), "agents")
}

// parseTrustedProxies reads comma-separated CIDRs; a bare address is a
// single host.
func parseTrustedProxies(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return nil, fmt.Errorf("trusted-proxies (CAIRN_TRUSTED_PROXIES) must be comma-separated CIDRs such as 10.0.0.0/8, got %q", f)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Online window bounds: below 30 s a device flaps offline between two
// 20 s heartbeats; beyond a day "online" stops meaning anything.
const (
	minOnlineWindow = 30 * time.Second
	maxOnlineWindow = 24 * time.Hour
)

// parseOnlineWindow reads a Go duration ("90s", "2m") or whole seconds.
func parseOnlineWindow(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if n, nerr := strconv.Atoi(v); nerr == nil {
		d, err = time.Duration(n)*time.Second, nil
	}
	if err != nil || d < minOnlineWindow || d > maxOnlineWindow {
		return 0, fmt.Errorf("device-online-window (CAIRN_DEVICE_ONLINE_WINDOW) must be a duration from %s to %s, got %q",
			minOnlineWindow, maxOnlineWindow, v)
	}
	return d, nil
}

// Transfer limit bounds: under 1 MiB nothing useful moves; beyond 1 TiB
// the content store (PostgreSQL) is the wrong place. Retention under a
// minute would delete a download before a browser fetched it; beyond 30
// days the store keeps files nobody will fetch.
const (
	minTransferBytes     = 1 << 20
	maxTransferBytes     = 1 << 40
	minTransferRetention = time.Minute
	maxTransferRetention = 30 * 24 * time.Hour
)

// parseTransferLimits checks CAIRN_TRANSFER_MAX_BYTES (bytes) and
// CAIRN_TRANSFER_RETENTION (a duration).
func parseTransferLimits(maxBytes, retention string) (int64, time.Duration, error) {
	n, err := strconv.ParseInt(maxBytes, 10, 64)
	if err != nil || n < minTransferBytes || n > maxTransferBytes {
		return 0, 0, fmt.Errorf("transfer-max-bytes (CAIRN_TRANSFER_MAX_BYTES) must be a number of bytes from %d to %d, got %q",
			int64(minTransferBytes), int64(maxTransferBytes), maxBytes)
	}
	d, err := time.ParseDuration(retention)
	if err != nil || d < minTransferRetention || d > maxTransferRetention {
		return 0, 0, fmt.Errorf("transfer-retention (CAIRN_TRANSFER_RETENTION) must be a duration from %s to %s, got %q",
			minTransferRetention, maxTransferRetention, retention)
	}
	return n, d, nil
}

// Transfer quota bounds (docs/architecture.md "Transfer quotas"): a
// budget is off (0) or at least one transfer of CAIRN_TRANSFER_MAX_BYTES
// and at most 1 PiB; caps are off (0) or up to 100,000 transfers; the
// headroom is up to 1 PiB. By default the Engine's budget is 16 transfers
// of the largest size (64 GiB with the default), 256 transfers run at
// once, 64 of them an operator's, and staging keeps 1 GiB free.
const (
	maxTransferQuotaBytes     = 1 << 50
	maxTransferConcurrent     = 100000
	defaultQuotaTransfers     = 16
	defaultTransferConcurrent = 256
	defaultOperatorConcurrent = 64
	defaultTransferMinFree    = 1 << 30
)

// transferQuotaSettings are the quota settings as given.
type transferQuotaSettings struct {
	bytes, operatorBytes, concurrent, operatorConcurrent, minFree, stagingPath *string
}

func transferQuotaFlags(fs *flag.FlagSet) transferQuotaSettings {
	return transferQuotaSettings{
		bytes: fs.String("transfer-quota-bytes", env("CAIRN_TRANSFER_QUOTA_BYTES", ""),
			"staged bytes all file transfers may hold at once, completed downloads until their retention passes (0: no budget; default 16 × transfer-max-bytes)"),
		operatorBytes: fs.String("transfer-operator-quota-bytes", env("CAIRN_TRANSFER_OPERATOR_QUOTA_BYTES", "0"),
			"staged bytes one operator's file transfers may hold at once (0: no budget)"),
		concurrent: fs.String("transfer-max-concurrent", env("CAIRN_TRANSFER_MAX_CONCURRENT", strconv.Itoa(defaultTransferConcurrent)),
			"file transfers queued or running at once on the Engine (0: no cap)"),
		operatorConcurrent: fs.String("transfer-operator-max-concurrent", env("CAIRN_TRANSFER_OPERATOR_MAX_CONCURRENT", strconv.Itoa(defaultOperatorConcurrent)),
			"file transfers one operator may have queued or running at once (0: no cap)"),
		minFree: fs.String("transfer-min-free-bytes", env("CAIRN_TRANSFER_MIN_FREE_BYTES", strconv.Itoa(defaultTransferMinFree)),
			"free bytes staging keeps on the filesystem of transfer-staging-path (0: no check)"),
		stagingPath: fs.String("transfer-staging-path", env("CAIRN_TRANSFER_STAGING_PATH", ""),
			"directory on the filesystem of PostgreSQL's data, for the free-space check (default: the private cluster's; with DATABASE_URL, none unless set)"),
	}
}

// parse checks the quota settings against CAIRN_TRANSFER_MAX_BYTES; the
// headroom is checked on the private cluster's directory, or on
// CAIRN_TRANSFER_STAGING_PATH (an external PostgreSQL's data directory is
// not the Engine's to see unless the operator names it).
func (q transferQuotaSettings) parse(maxBytes int64, databaseURL, dataDir string) (transfers.Quotas, error) {
	var out transfers.Quotas
	budget := func(v, flagName, envName string) (int64, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > maxTransferQuotaBytes || (n > 0 && n < maxBytes) {
			return 0, fmt.Errorf("%s (%s) must be 0 (no budget) or a number of bytes from CAIRN_TRANSFER_MAX_BYTES (%d) to %d, got %q",
				flagName, envName, maxBytes, int64(maxTransferQuotaBytes), v)
		}
		return n, nil
	}
	limit := func(v, flagName, envName string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxTransferConcurrent {
			return 0, fmt.Errorf("%s (%s) must be 0 (no cap) or a number of transfers up to %d, got %q",
				flagName, envName, maxTransferConcurrent, v)
		}
		return n, nil
	}
	var err error
	global := *q.bytes
	if global == "" {
		global = strconv.FormatInt(min(defaultQuotaTransfers*maxBytes, maxTransferQuotaBytes), 10)
	}
	if out.Bytes, err = budget(global, "transfer-quota-bytes", "CAIRN_TRANSFER_QUOTA_BYTES"); err != nil {
		return out, err
	}
	if out.OperatorBytes, err = budget(*q.operatorBytes, "transfer-operator-quota-bytes", "CAIRN_TRANSFER_OPERATOR_QUOTA_BYTES"); err != nil {
		return out, err
	}
	if out.Bytes > 0 && out.OperatorBytes > out.Bytes {
		return out, fmt.Errorf("transfer-operator-quota-bytes (CAIRN_TRANSFER_OPERATOR_QUOTA_BYTES) %d must not exceed transfer-quota-bytes (CAIRN_TRANSFER_QUOTA_BYTES) %d",
			out.OperatorBytes, out.Bytes)
	}
	if out.Concurrent, err = limit(*q.concurrent, "transfer-max-concurrent", "CAIRN_TRANSFER_MAX_CONCURRENT"); err != nil {
		return out, err
	}
	if out.OperatorConcurrent, err = limit(*q.operatorConcurrent, "transfer-operator-max-concurrent", "CAIRN_TRANSFER_OPERATOR_MAX_CONCURRENT"); err != nil {
		return out, err
	}
	if out.Concurrent > 0 && out.OperatorConcurrent > out.Concurrent {
		return out, fmt.Errorf("transfer-operator-max-concurrent (CAIRN_TRANSFER_OPERATOR_MAX_CONCURRENT) %d must not exceed transfer-max-concurrent (CAIRN_TRANSFER_MAX_CONCURRENT) %d",
			out.OperatorConcurrent, out.Concurrent)
	}
	n, err := strconv.ParseInt(*q.minFree, 10, 64)
	if err != nil || n < 0 || n > maxTransferQuotaBytes {
		return out, fmt.Errorf("transfer-min-free-bytes (CAIRN_TRANSFER_MIN_FREE_BYTES) must be 0 (no check) or a number of bytes up to %d, got %q",
			int64(maxTransferQuotaBytes), *q.minFree)
	}
	out.MinFreeBytes = n
	switch p := *q.stagingPath; {
	case p != "":
		abs, err := filepath.Abs(p)
		if err != nil {
			return out, fmt.Errorf("transfer-staging-path (CAIRN_TRANSFER_STAGING_PATH): %w", err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return out, fmt.Errorf("transfer-staging-path (CAIRN_TRANSFER_STAGING_PATH) must be an existing directory, got %q", p)
		}
		out.StagingPath = abs
	case databaseURL == "":
		// The private cluster's data lives here (cmd/cairn/engine.go).
		out.StagingPath = filepath.Join(dataDir, "postgres")
	}
	return out, nil
}

// parseShellTranscripts checks CAIRN_SHELL_TRANSCRIPT_MAX_BYTES (bytes)
// and CAIRN_SHELL_RECORD_INPUT (1 or 0).
func parseShellTranscripts(maxBytes, recordInput string) (int64, bool, error) {
	n, err := strconv.ParseInt(maxBytes, 10, 64)
	if err != nil || n < shells.MinTranscriptMax || n > shells.MaxTranscriptMax {
		return 0, false, fmt.Errorf("shell-transcript-max-bytes (CAIRN_SHELL_TRANSCRIPT_MAX_BYTES) must be a number of bytes from %d to %d, got %q",
			shells.MinTranscriptMax, shells.MaxTranscriptMax, maxBytes)
	}
	switch recordInput {
	case "1":
		return n, false, nil
	case "0":
		return n, true, nil
	}
	return 0, false, fmt.Errorf("shell-record-input (CAIRN_SHELL_RECORD_INPUT) must be 1 or 0, got %q", recordInput)
}

// Session lifetime bounds: under a minute idle the console signs out
// between two clicks; beyond a day idle or 30 days absolute a stolen
// session cookie is as good as a password.
const (
	minSessionIdle = time.Minute
	maxSessionIdle = 24 * time.Hour
	minSessionMax  = time.Hour
	maxSessionMax  = 30 * 24 * time.Hour
)

// loadSessionLifetimes takes CAIRN_SESSION_IDLE_TIMEOUT and
// CAIRN_SESSION_MAX_AGE where no flag set them, and checks both.
func (c *config) loadSessionLifetimes() error {
	for _, s := range []struct {
		d        *time.Duration
		env      string
		def      time.Duration
		min, max time.Duration
	}{
		{&c.SessionIdle, "CAIRN_SESSION_IDLE_TIMEOUT", auth.DefaultSessionIdle, minSessionIdle, maxSessionIdle},
		{&c.SessionMax, "CAIRN_SESSION_MAX_AGE", auth.DefaultSessionMax, minSessionMax, maxSessionMax},
	} {
		if *s.d == 0 {
			v := env(s.env, s.def.String())
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%s must be a duration such as 30m or 12h, got %q", s.env, v)
			}
			*s.d = d
		}
		if *s.d < s.min || *s.d > s.max {
			return fmt.Errorf("%s must be from %s to %s, got %s", s.env, s.min, s.max, *s.d)
		}
	}
	if c.SessionIdle > c.SessionMax {
		return fmt.Errorf("CAIRN_SESSION_IDLE_TIMEOUT (%s) must not exceed CAIRN_SESSION_MAX_AGE (%s)", c.SessionIdle, c.SessionMax)
	}
	return nil
}

// checkPlainHTTP refuses plain HTTP beyond loopback (DESIGN "Security
// decisions") unless the deployment says a TLS-terminating proxy is in front.
func (c config) checkPlainHTTP() error {
	if c.AllowPlainHTTP || isLoopback(c.HTTPAddr) {
		return nil
	}
	return fmt.Errorf("plain HTTP is served on loopback only, but CAIRN_HTTP_ADDR is %s: "+
		"listen on 127.0.0.1 and let agents and operators use HTTPS (CAIRN_HTTPS_ADDR), "+
		"or set CAIRN_ALLOW_PLAIN_HTTP=1 when a TLS-terminating proxy is in front of the Engine", c.HTTPAddr)
}

// isLoopback reports whether a listen address only reaches this machine.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tlsHostnames are the names the local CA's certificate must cover: the
// public URL's host and CAIRN_TLS_HOSTNAMES.
func (c config) tlsHostnames() []string {
	var names []string
	if u, err := url.Parse(c.PublicURL); err == nil && u.Hostname() != "" {
		names = append(names, u.Hostname())
	}
	return append(names, c.TLSHostnames...)
}

// servedAgentURLs are the origins agents may sign DPoP proofs for besides
// the public URL: every origin `cairn serve` really answers agents on. That
// is each listener under the loopback names it takes (an agent on the
// Engine's own machine may be told http://127.0.0.1:8080 as well as
// http://localhost:8080), and the HTTPS listener under every name its
// certificate covers (certNames), which are the only names TLS lets an
// agent use there.
func (c config) servedAgentURLs(certNames []string) []string {
	var out []string
	add := func(scheme, host, port string) {
		u := scheme + "://" + net.JoinHostPort(strings.Trim(host, "[]"), port)
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	if host, port, err := net.SplitHostPort(c.HTTPAddr); err == nil {
		for _, h := range listenerNames(host) {
			add("http", h, port)
		}
	}
	if c.HTTPSAddr != "" {
		if host, port, err := net.SplitHostPort(c.HTTPSAddr); err == nil {
			names := listenerNames(host)
			if u, err := url.Parse(c.PublicURL); err == nil && u.Hostname() != "" {
				names = append(names, u.Hostname())
			}
			for _, n := range append(names, certNames...) {
				// A wildcard name is no origin an agent signs for.
				if !strings.HasPrefix(n, "*") {
					add("https", n, port)
				}
			}
		}
	}
	return out
}

// listenerNames are the hosts an agent can reach a listener bound to host
// under: the loopback names it accepts, or the bound address itself.
func listenerNames(host string) []string {
	ip := net.ParseIP(host)
	switch {
	case host == "" || strings.EqualFold(host, "localhost") || (ip != nil && ip.IsUnspecified()):
		return []string{"localhost", "127.0.0.1", "::1"}
	case ip != nil && ip.IsLoopback() && ip.To4() != nil:
		return []string{"localhost", "127.0.0.1", host}
	case ip != nil && ip.IsLoopback():
		return []string{"localhost", "::1"}
	}
	return []string{host}
}

// agentURLs are the origins a standalone site worker's agents may sign
// DPoP proofs for besides the public URL and its advertised address: the
// HTTPS address.
func (c config) agentURLs() []string {
	if c.HTTPSAddr == "" {
		return nil
	}
	return []string{c.httpsURL()}
}

// httpsURL is the HTTPS address to print: the HTTPS port under the public
// URL's host (localhost for a loopback listener).
func (c config) httpsURL() string {
	host, port, err := net.SplitHostPort(c.HTTPSAddr)
	if err != nil {
		return "https://" + c.HTTPSAddr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		host = "localhost"
	} else if host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
		if u, err := url.Parse(c.PublicURL); err == nil && u.Hostname() != "" {
			host = u.Hostname()
		}
	}
	return "https://" + net.JoinHostPort(host, port)
}

// newLogger writes format lines (CAIRN_LOG_FORMAT) at level to stderr,
// with secrets redacted.
func newLogger(format string, level slog.Level) *slog.Logger {
	return logs.New(os.Stderr, format, level)
}

// logDir is where the process's log files go ("" when off).
func (c config) logDir() string {
	switch c.LogDir {
	case "off":
		return ""
	case "":
		return filepath.Join(c.DataDir, "logs")
	}
	return c.LogDir
}

// newProcessLogger is newLogger also writing JSON lines to the rotating
// file <log-dir>/<source>.log, which the logs route reads; close closes
// that file. Without a log directory it is newLogger.
func newProcessLogger(c config, source string) (log *slog.Logger, close func(), err error) {
	dir := c.logDir()
	if dir == "" {
		return newLogger(c.LogFormat, c.LogLevel), func() {}, nil
	}
	f, err := logs.OpenFile(logs.FileOptions{Dir: dir, Source: source, MaxMB: c.LogMaxMB, MaxFiles: c.LogMaxFiles})
	if err != nil {
		return nil, nil, err
	}
	return logs.NewTee(os.Stderr, c.LogFormat, c.LogLevel, f), func() { f.Close() }, nil
}

// defaultPublicURL is http://<http-addr>, except that a loopback address is
// named localhost: browsers refuse IP addresses as WebAuthn relying parties,
// so passkeys work out of the box on a local Engine.
func defaultPublicURL(httpAddr string) string {
	host, port, err := net.SplitHostPort(httpAddr)
	if err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			return "http://" + net.JoinHostPort("localhost", port)
		}
	}
	return "http://" + httpAddr
}

// parseTunnels checks the CAIRN_WIREGUARD_* settings.
func parseTunnels(port, endpoint, fallback, network string) (tunnels.Config, error) {
	var c tunnels.Config
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return c, fmt.Errorf("wireguard-port (CAIRN_WIREGUARD_PORT) must be a UDP port from 1 to 65535, got %q", port)
	}
	c.Port = p
	if endpoint != "" {
		if _, ep, err := net.SplitHostPort(endpoint); err != nil || ep == "" {
			return c, fmt.Errorf("wireguard-endpoint (CAIRN_WIREGUARD_ENDPOINT) must be host:port, got %q", endpoint)
		}
		c.Endpoint = endpoint
	}
	if fallback != "" {
		a, err := netip.ParseAddr(fallback)
		if err != nil || a.IsLoopback() || a.IsUnspecified() {
			return c, fmt.Errorf("wireguard-fallback-ip (CAIRN_WIREGUARD_FALLBACK_IP) must be a non-loopback IP address, got %q", fallback)
		}
		c.FallbackIP = a
	}
	if c.Network, err = netip.ParsePrefix(network); err != nil || !c.Network.Addr().Is4() || c.Network.Bits() < 8 || c.Network.Bits() > 30 {
		return c, fmt.Errorf("wireguard-network (CAIRN_WIREGUARD_NETWORK) must be an IPv4 prefix of /8 to /30, got %q", network)
	}
	return c, nil
}
