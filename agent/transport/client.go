// Package transport is the agent's connection to the Engine: one
// http.Transport whose dialer applies the server_ip_fallback rule and whose
// TLS trusts the system roots plus the pinned Engine CA, shared by REST
// calls (Do) and the realtime WebSocket (DialWebSocket). Every request
// carries the privileged agent context header and, when authenticated, a
// DPoP proof made with the device key (docs/agent.md "Transport").
package transport

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// MaxResponseBytes bounds every response body the client reads, so a
// broken or hostile endpoint cannot exhaust the agent's memory.
const MaxResponseBytes = 8 << 20

// DefaultRequestTimeout applies to a Do call whose context has no
// deadline: the agent runs unattended, and a request hanging forever
// would stall its loop silently.
const DefaultRequestTimeout = 60 * time.Second

// Config is what a Client needs; FromAgentConfig fills it from agent.json.
type Config struct {
	// ServerURL is the Engine's public base URL (server_url): http or
	// https, optionally with a path prefix.
	ServerURL string
	// ServerIPFallback is a bare IP dialled when the FQDN dial fails.
	ServerIPFallback string
	// CAPEM is the pinned Engine CA (internal_ca_pem): when set, the
	// Engine's certificate must chain to it alone unless TrustPublicCAs
	// (trust_public_cas) adds the system roots. Empty trusts the system
	// roots only.
	CAPEM          string
	TrustPublicCAs bool
	// SystemRoots replaces x509.SystemCertPool (tests inject roots).
	SystemRoots func() (*x509.CertPool, error)
	// Key is the device key that signs DPoP proofs. Only requests that
	// carry a proof need it.
	Key ed25519.PrivateKey
	// AgentVersion goes into the User-Agent header.
	AgentVersion string
	// Logger receives fallback warnings (nothing when nil).
	Logger *slog.Logger
	// Now is the proof clock (time.Now when nil).
	Now func() time.Time
	// PrimaryDialTimeout, FallbackDialTimeout and RequestTimeout override
	// the defaults.
	PrimaryDialTimeout  time.Duration
	FallbackDialTimeout time.Duration
	RequestTimeout      time.Duration
}

// Client talks to one Engine. It is safe for concurrent use.
type Client struct {
	base      string // server_url without a trailing slash
	key       ed25519.PrivateKey
	userAgent string
	timeout   time.Duration // for Do calls without a deadline
	now       func() time.Time
	dialer    *dialer
	transport *http.Transport
	http      *http.Client

	// origins are where this agent's WebSockets may go: server_url's
	// origin and the realtime routes the Engine named (TrustOrigin). A
	// socket request naming anything else is refused, so whoever can put
	// a request on the command path cannot lead the agent, its access
	// token and a root shell to a server of theirs (issue 21 item 1).
	originsMu sync.Mutex
	origins   map[string]bool
}

// origin is u's scheme, host and port (the default port dropped), with
// ws and wss read as http and https.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	switch scheme {
	case "ws":
		scheme = "http"
	case "wss":
		scheme = "https"
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host
}

// TrustOrigin lets WebSockets go to rawURL's origin: a realtime route the
// Engine named (a site worker's address).
func (c *Client) TrustOrigin(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return fmt.Errorf("transport: %q is not an absolute URL", rawURL)
	}
	c.originsMu.Lock()
	defer c.originsMu.Unlock()
	c.origins[origin(u)] = true
	return nil
}

func (c *Client) trusted(u *url.URL) bool {
	c.originsMu.Lock()
	defer c.originsMu.Unlock()
	return c.origins[origin(u)]
}

// New checks cfg and builds a Client.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.ServerURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("transport: server_url %q must be an absolute http(s) URL", cfg.ServerURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("transport: server_url %q must not carry user info, a query or a fragment", cfg.ServerURL)
	}
	if p := agent.IPFallbackProblem(cfg.ServerIPFallback); p != "" {
		return nil, fmt.Errorf("transport: server_ip_fallback %q: %s", cfg.ServerIPFallback, p)
	}
	if cfg.Key != nil && len(cfg.Key) != ed25519.PrivateKeySize {
		return nil, errors.New("transport: the device key is not an Ed25519 private key")
	}
	tlsCfg, err := tlsConfig(cfg.CAPEM, cfg.TrustPublicCAs, cfg.SystemRoots)
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	d := &dialer{
		engineHost:      strings.ToLower(u.Hostname()),
		fallbackIP:      cfg.ServerIPFallback,
		primaryTimeout:  orDefault(cfg.PrimaryDialTimeout, DefaultPrimaryDialTimeout),
		fallbackTimeout: orDefault(cfg.FallbackDialTimeout, DefaultFallbackDialTimeout),
		log:             log,
		now:             now,
	}
	version := cfg.AgentVersion
	if version == "" {
		version = "dev"
	}
	// No proxy: the fallback rule is about reaching the Engine itself, and
	// a proxy would hide which path was taken. HTTP/2 stays off because the
	// WebSocket upgrade needs HTTP/1.1 on this same transport.
	tr := &http.Transport{
		DialContext:           d.DialContext,
		TLSClientConfig:       tlsCfg,
		TLSHandshakeTimeout:   10 * time.Second,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	c := &Client{
		base:      strings.TrimRight(cfg.ServerURL, "/"),
		key:       cfg.Key,
		userAgent: "cairn-agent/" + version,
		timeout:   orDefault(cfg.RequestTimeout, DefaultRequestTimeout),
		now:       now,
		dialer:    d,
		transport: tr,
		origins:   map[string]bool{origin(u): true},
	}
	c.http = &http.Client{
		Transport: tr,
		// A DPoP proof is bound to one URL, so a redirected request would
		// be refused anyway; an Engine never redirects agent routes.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c, nil
}

// FromAgentConfig builds a Client from agent.json values.
func FromAgentConfig(c *agent.Config, agentVersion string, logger *slog.Logger) (*Client, error) {
	var key ed25519.PrivateKey
	if c.Ed25519PrivateKey != "" {
		k, err := c.PrivateKey()
		if err != nil {
			return nil, fmt.Errorf("transport: %w", err)
		}
		key = k
	}
	return New(Config{
		ServerURL:        c.ServerURL,
		ServerIPFallback: c.ServerIPFallback,
		CAPEM:            c.InternalCAPEM,
		TrustPublicCAs:   c.TrustPublicCAs,
		Key:              key,
		AgentVersion:     agentVersion,
		Logger:           logger,
	})
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Auth says how a request authenticates.
type Auth struct {
	proof       bool
	bearer      bool
	accessToken string
}

// AuthNone sends no proof: the enrollment nonce.
var AuthNone = Auth{}

// AuthProof sends a DPoP proof without an access token: enrollment request
// (for its htu only), poll and token refresh, which prove the device key.
var AuthProof = Auth{proof: true}

// AuthBearer sends the access token as "Authorization: DPoP <token>" with
// a proof carrying its hash (ath): every Device route.
func AuthBearer(accessToken string) Auth {
	return Auth{proof: true, bearer: true, accessToken: accessToken}
}

// ServerURL is the Engine base URL requests are made against.
func (c *Client) ServerURL() string { return c.base }

// Dials reports which dial paths were used.
func (c *Client) Dials() DialStats { return c.dialer.snapshot() }

// HTTPClient is the underlying client (same dialer and TLS, no redirects,
// no agent headers) for streams Do does not fit, such as artifact
// downloads; use NewRequest to make their requests.
func (c *Client) HTTPClient() *http.Client { return c.http }

// CloseIdleConnections drops pooled connections, for example after the
// Engine's address changed.
func (c *Client) CloseIdleConnections() { c.transport.CloseIdleConnections() }

// NewRequest makes a request to server_url + path (path starts with "/"
// and may carry a query) with the agent headers and, per auth, the DPoP
// proof and Authorization header. A proof is single-use: make a new
// request for every attempt.
func (c *Client) NewRequest(ctx context.Context, method, path string, body io.Reader, auth Auth) (*http.Request, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("transport: path %q must start with /", path)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	if err := c.authorize(req.Header, method, req.URL.String(), auth); err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	return req, nil
}

// authorize sets the headers every Engine request carries and the proof.
// htu is the URL the proof names: the Engine checks it against its public
// URL of the request.
func (c *Client) authorize(h http.Header, method, htu string, auth Auth) error {
	h.Set(proto.HeaderAgentContext, proto.AgentContextValue(proto.ContextPrivileged))
	h.Set("User-Agent", c.userAgent)
	if !auth.proof {
		return nil
	}
	if auth.bearer && auth.accessToken == "" {
		return errors.New("transport: bearer authentication without an access token")
	}
	if c.key == nil {
		return errors.New("transport: no device key to sign the DPoP proof")
	}
	proof, err := agent.NewProof(c.key, method, htu, auth.accessToken, c.now())
	if err != nil {
		return fmt.Errorf("transport: %w", err)
	}
	h.Set(proto.HeaderDPoP, proof)
	if auth.bearer {
		h.Set("Authorization", proto.AuthScheme+" "+auth.accessToken)
	}
	return nil
}

// Do sends in (JSON; no body when nil) to server_url + path and decodes a
// 2xx answer into out (ignored when nil or the status is 204). Any other
// status is an *Error.
func (c *Client) Do(ctx context.Context, method, path string, in, out any, auth Auth) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("transport: encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := c.NewRequest(ctx, method, path, body, auth)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("transport: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if err := CheckResponse(resp); err != nil {
		return err
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		drain(resp.Body)
		return nil
	}
	data, err := readBounded(resp.Body)
	if err != nil {
		return fmt.Errorf("transport: %s %s: %w", method, path, err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("transport: %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// readBounded reads a body of at most MaxResponseBytes.
func readBounded(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if len(data) > MaxResponseBytes {
		return nil, fmt.Errorf("answer is larger than %d bytes", MaxResponseBytes)
	}
	return data, nil
}
