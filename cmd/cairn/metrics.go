package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// metricsPath is where Prometheus scrapes a process, on its metrics
// listener (CAIRN_METRICS_ADDR) only.
const metricsPath = "/metrics"

// withoutMetrics answers 404 at /metrics on an API listener, rather than
// the console's fallback 200: a Prometheus still pointed at the old place
// sees the target gone instead of scraping HTML.
func withoutMetrics(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == metricsPath {
			http.NotFound(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// metricsOnly serves metrics at /metrics and nothing else (404 elsewhere).
// With a token, a scrape must carry "Authorization: Bearer <token>"; the
// comparison is over SHA-256 digests in constant time, so neither the
// token's bytes nor its length leak through timing.
func metricsOnly(metrics http.Handler, token string) http.Handler {
	authorized := bearerCheck(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != metricsPath {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if authorized(w, r) {
			metrics.ServeHTTP(w, r)
		}
	})
}

// bearerCheck answers 401 (and false) to a request without the token;
// with no token every request passes.
func bearerCheck(token string) func(w http.ResponseWriter, r *http.Request) bool {
	var want [sha256.Size]byte
	if token != "" {
		want = sha256.Sum256([]byte(token))
	}
	return func(w http.ResponseWriter, r *http.Request) bool {
		if token == "" {
			return true
		}
		got := sha256.Sum256([]byte(bearerToken(r)))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="cairn-metrics"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return false
		}
		return true
	}
}

// pprofPrefix is where the Go profiler answers on the metrics listener
// when CAIRN_PPROF is set (docs/benchmarks.md profiles the Engine there).
const pprofPrefix = "/debug/pprof/"

// withPprof serves the Go profiler under pprofPrefix, behind the same
// bearer token as the metrics, and passes everything else to next. A
// profile names no secret but shows the process's code paths and costs:
// it is off unless asked for, and never on the API listener.
func withPprof(next http.Handler, token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(pprofPrefix, pprof.Index)
	mux.HandleFunc(pprofPrefix+"cmdline", pprof.Cmdline)
	mux.HandleFunc(pprofPrefix+"profile", pprof.Profile)
	mux.HandleFunc(pprofPrefix+"symbol", pprof.Symbol)
	mux.HandleFunc(pprofPrefix+"trace", pprof.Trace)
	authorized := bearerCheck(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, pprofPrefix) {
			next.ServeHTTP(w, r)
			return
		}
		if authorized(w, r) {
			mux.ServeHTTP(w, r)
		}
	})
}

// bearerToken is the credentials of an "Authorization: Bearer" header
// ("" for none); the scheme is case-insensitive (RFC 7235).
func bearerToken(r *http.Request) string {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(cred)
}

// checkMetricsAddr validates CAIRN_METRICS_ADDR: empty (metrics off) or
// host:port with a port from 1 to 65535 (an empty host listens on every
// interface).
func checkMetricsAddr(addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
		return fmt.Errorf("metrics-addr (CAIRN_METRICS_ADDR) must be host:port such as 127.0.0.1:9464, or empty to serve no metrics; got %q", addr)
	}
	return nil
}

// readMetricsToken reads the bearer token in file (CAIRN_METRICS_TOKEN_FILE;
// "" for none). Surrounding whitespace is dropped, as Prometheus drops it
// from its credentials_file. Errors name the file, never its content.
func readMetricsToken(file, addr string) (string, error) {
	if file == "" {
		return "", nil
	}
	if addr == "" {
		return "", errors.New("metrics-token-file (CAIRN_METRICS_TOKEN_FILE) is set but metrics-addr (CAIRN_METRICS_ADDR) is empty, so no metrics are served: set both or neither")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		// The error names the file only (os.PathError carries no content).
		return "", fmt.Errorf("metrics-token-file (CAIRN_METRICS_TOKEN_FILE): %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("metrics-token-file (CAIRN_METRICS_TOKEN_FILE): %s holds no token", file)
	}
	if strings.IndexFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "", fmt.Errorf("metrics-token-file (CAIRN_METRICS_TOKEN_FILE): the token in %s must be one line without spaces or control characters", file)
	}
	return token, nil
}

// errMetricsPublicRemoved is the error for CAIRN_METRICS_PUBLIC, which served
// /metrics on the API listeners: refusing it, rather than ignoring it,
// keeps an operator from silently losing scrapes.
var errMetricsPublicRemoved = errors.New("CAIRN_METRICS_PUBLIC was removed: /metrics is no longer served on the API listeners, " +
	"only on its own listener; set CAIRN_METRICS_ADDR (such as 127.0.0.1:9464, with CAIRN_METRICS_TOKEN_FILE when it is " +
	"reachable beyond this machine), point Prometheus there, and unset CAIRN_METRICS_PUBLIC")

// startMetrics serves /metrics on c.MetricsAddr on its own listener, and
// nothing when it is empty (a nil server). Serve's end is sent on served;
// the caller shuts the server down with its others.
func startMetrics(c config, metrics http.Handler, log *slog.Logger, served chan<- error) (*http.Server, error) {
	if c.MetricsAddr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", c.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w (set CAIRN_METRICS_ADDR)", c.MetricsAddr, err)
	}
	handler := metricsOnly(metrics, c.MetricsToken)
	if c.Pprof {
		handler = withPprof(handler, c.MetricsToken)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	go func() { served <- srv.Serve(ln) }()
	if c.MetricsToken == "" && !isLoopback(c.MetricsAddr) {
		log.Warn("metrics are served beyond loopback without a token: anyone who reaches this address reads them "+
			"(route, site and pool series); set CAIRN_METRICS_TOKEN_FILE or firewall the address", "addr", c.MetricsAddr)
	}
	log.Info("metrics listening", "addr", c.MetricsAddr, "path", metricsPath, "token", c.MetricsToken != "", "pprof", c.Pprof)
	return srv, nil
}

// metricsURL is the scrape URL to print in the banner.
func (c config) metricsURL() string {
	host, port, err := net.SplitHostPort(c.MetricsAddr)
	if err != nil {
		return c.MetricsAddr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + metricsPath
}
