package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
)

// config is the Engine's configuration: environment variables, overridable
// by flags of the same meaning. docs/operations.md lists them.
type config struct {
	DatabaseURL       string
	TemporalAddress   string
	TemporalNamespace string
	HTTPAddr          string
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
	LogLevel          slog.Level
	SiteWorkers       string // all | none
	PassphraseFile    string
	GitHubAPIURL      string
	// GitHubToken is read from the environment only: a flag would show it
	// in the process list.
	GitHubToken string
	// DeviceOnlineWindow is how long after its last heartbeat a device
	// still counts as online.
	DeviceOnlineWindow time.Duration
	// AgentArtifacts is the directory of agent builds the Engine serves
	// (<platform>/cairn-agent[.exe] and .build-id sidecars).
	AgentArtifacts string
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
	fs.StringVar(&c.DatabaseURL, "database-url", env("DATABASE_URL", ""), "PostgreSQL URL; empty starts a private cluster under the data directory")
	fs.StringVar(&c.TemporalAddress, "temporal-address", env("TEMPORAL_ADDRESS", ""), "Temporal frontend host:port; empty embeds Temporal's dev server")
	fs.StringVar(&c.TemporalNamespace, "temporal-namespace", env("TEMPORAL_NAMESPACE", "default"), "Temporal namespace")
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
	level := fs.String("log-level", env("CAIRN_LOG_LEVEL", "info"), "debug, info, warn or error")
	fs.StringVar(&c.SiteWorkers, "site-workers", env("CAIRN_SITE_WORKERS", "all"), "site workers this process runs: all or none")
	fs.StringVar(&c.PassphraseFile, "aegis-passphrase-file", env("CAIRN_AEGIS_PASSPHRASE_FILE", ""), "file holding the master-cipher passphrase, to unlock unattended at start")
	fs.StringVar(&c.GitHubAPIURL, "github-api-url", env("CAIRN_GITHUB_API_URL", "https://api.github.com"), "source-hosting API base URL (GitHub or compatible)")
	c.GitHubToken = env("CAIRN_GITHUB_TOKEN", os.Getenv("GITHUB_TOKEN"))
	fs.StringVar(&c.AgentArtifacts, "agent-artifacts", env("CAIRN_AGENT_ARTIFACTS", defaultAgentArtifacts()),
		"directory of agent builds served to agents and installers (make build fills bin/agents)")
	onlineWindow := fs.String("device-online-window", env("CAIRN_DEVICE_ONLINE_WINDOW", devices.DefaultOnlineWindow.String()),
		"how long after its last heartbeat a device counts as online (a duration such as 90s, or seconds)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.DeviceOnlineWindow, err = parseOnlineWindow(*onlineWindow); err != nil {
		return c, err
	}
	if err := c.LogLevel.UnmarshalText([]byte(*level)); err != nil {
		return c, fmt.Errorf("log level: %w", err)
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
	if u, err := url.Parse(c.GitHubAPIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("github-api-url must be an http(s) URL, got %q", c.GitHubAPIURL)
	}
	if c.PublicURL == "" {
		c.PublicURL = defaultPublicURL(c.HTTPAddr)
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.DataDir, err = filepath.Abs(c.DataDir); err != nil {
		return c, err
	}
	if c.AgentArtifacts != "" {
		if c.AgentArtifacts, err = filepath.Abs(c.AgentArtifacts); err != nil {
			return c, err
		}
	}
	return c, nil
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

// agentURLs are the origins agents may sign DPoP proofs for besides the
// public URL: the HTTPS address.
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

func newLogger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
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
