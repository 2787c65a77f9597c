package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/db"
	cairnengine "github.com/cairn-rmm/cairn/engine"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/agentartifacts"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devtemporal"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/internal/slapdtest"
	"github.com/cairn-rmm/cairn/internal/transfers"
	"github.com/cairn-rmm/cairn/workers"
	"github.com/cairn-rmm/cairn/workflows"
)

// One embedded Temporal server serves every test of this binary; tests keep
// apart through unique site slugs (task queues) and workflow IDs.
var temporalClient client.Client

// temporalAddress is that server's address, for tests that dial it with
// their own client options.
var temporalAddress string

// One private slapd serves the directory sign-in tests; they keep apart
// through unique entry names.
var slapd *slapdtest.Server

func TestMain(m *testing.M) {
	os.Exit(func() int {
		srv, err := devtemporal.Start(devtemporal.Options{SearchAttributes: workflows.SearchAttributes, LogLevel: slog.LevelError,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			fmt.Fprintln(os.Stderr, "start Temporal:", err)
			return 1
		}
		defer srv.Stop()
		temporalAddress = srv.Address
		temporalClient, err = client.Dial(client.Options{HostPort: srv.Address, Namespace: srv.Namespace,
			Logger: quietTemporalLogger{}})
		if err != nil {
			fmt.Fprintln(os.Stderr, "dial Temporal:", err)
			return 1
		}
		defer temporalClient.Close()
		if slapd, err = slapdtest.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer slapd.Stop()
		return pgtest.Main(m)
	}())
}

const (
	testPublicURL = "https://cairn.example.test"
	passphrase    = "correct horse battery staple"
	adminPassword = "admin password 123"
)

// engine is one Engine replica over a test database.
type engine struct {
	srv    *api.Server
	http   *httptest.Server
	cipher *aegis.Cipher
	auth   *auth.Service
	bus    *events.Bus
	mgr    *workers.Manager
	// devices runs no flush loop: tests flush heartbeats themselves.
	devices *devices.Service
	// core is the whole Engine (scheduled-job reconcile, services).
	core *cairnengine.Engine
}

type fixture struct {
	store  *db.Store
	clk    *authtest.Clock
	engine *engine
	url    string
	// github is the fake source-hosting API every replica talks to;
	// githubEnvToken is the environment token replicas get when started.
	github         *fakeGitHub
	githubEnvToken string
	// engineQueue is this fixture's Engine-wide task queue, shared by its
	// replicas and private to its database.
	engineQueue string
	// agentArtifacts is the replicas' agent build directory ("": none).
	agentArtifacts string
	// artifactKey signs agent artifacts (made by the first replica).
	artifactKey *agentartifacts.ArtifactKey
	// trustedProxies are the replicas' CAIRN_TRUSTED_PROXIES.
	trustedProxies []netip.Prefix
	// publicURL is the replicas' public URL ("": testPublicURL).
	publicURL string
	// temporal is how the replicas reach Temporal (nil: the shared server).
	temporal *client.Options
	// proofRateLimit is the replicas' budget of unbound DPoP proofs per
	// address and minute (0: the default).
	proofRateLimit int
	// agentURLs are further origins the replicas accept in DPoP proofs.
	agentURLs []string
	// transferStall is when a silent file transfer is asked of its agent
	// again (0: the workflow's default).
	transferStall time.Duration
	// transferMaxBytes bounds one transfer (0: the default).
	transferMaxBytes int64
	// transferQuotas bound what transfers hold at once (zero: none).
	transferQuotas transfers.Quotas
	// eventKeepAlive is the replicas' event-stream keep-alive, the shell
	// guard's tick too (0: 200 ms).
	eventKeepAlive time.Duration
	// shellTranscriptMax caps shell transcripts (0: the default);
	// shellNoInput leaves keystrokes out of them.
	shellTranscriptMax int64
	shellNoInput       bool
	// logDir is the replicas' log file directory ("": none).
	logDir string
	// creds are the password and TOTP secret behind each session token
	// from login, for the re-authentication of sensitive actions.
	credsMu sync.Mutex
	creds   map[string]signInCreds
	// logs are every replica's log lines (debug level), scanned for the
	// secrets exchanged with hosts when the test ends (logscan_test.go);
	// extraSecrets are secrets the test got outside HTTP.
	logs         *syncBuffer
	hostsMu      sync.Mutex
	hosts        []string
	extraMu      sync.Mutex
	extraSecrets []string
}

type signInCreds struct{ password, secret string }

func setup(t *testing.T) *fixture {
	t.Helper()
	store := pgtest.NewDB(t)
	f := &fixture{store: store, clk: authtest.NewClock(), github: newFakeGitHub(t)}
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	return f
}

var console = fstest.MapFS{
	"index.html":    {Data: []byte("<!doctype html><title>Cairn</title>")},
	"assets/app.js": {Data: []byte("console.log('cairn')")},
	"api-docs.html": {Data: []byte("<!doctype html><title>Cairn API reference</title>")},
}

// newEngine starts another replica on the fixture's database through the
// Engine's one constructor: its own cipher (locked unless set up through
// it), bus, worker manager, agent gateway and HTTP.
func (f *fixture) newEngine(t *testing.T) *engine {
	t.Helper()
	f.watchLogs(t)
	var h slog.Handler = slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})
	if testing.Verbose() {
		h = teeHandler{h, slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})}
	}
	log := slog.New(h)
	if f.engineQueue == "" {
		f.engineQueue = "engine-" + uniqueSlug("test")
	}
	kdf := authtest.CheapKDF
	publicURL := f.publicURL
	if publicURL == "" {
		publicURL = testPublicURL
	}
	keepAlive := f.eventKeepAlive
	if keepAlive == 0 {
		keepAlive = 200 * time.Millisecond
	}
	topts := client.Options{HostPort: temporalAddress, Namespace: "default", Logger: quietTemporalLogger{}}
	if f.temporal != nil {
		topts = *f.temporal
	}
	if f.artifactKey == nil {
		// One artifact key for every replica, as an operator configures it.
		key, err := agentartifacts.GenerateKeyFile(filepath.Join(t.TempDir(), "artifact-signing.key"))
		require.NoError(t, err)
		f.artifactKey = key
	}
	e, err := cairnengine.New(context.Background(), f.store, topts, cairnengine.Config{
		PublicURL: publicURL, EngineQueue: f.engineQueue, Namespace: "default", Console: fs.FS(console), Log: log,
		GitHubAPIURL: f.github.srv.URL, GitHubToken: f.githubEnvToken, AgentArtifacts: f.agentArtifacts, ArtifactKey: f.artifactKey, TrustedProxies: f.trustedProxies, ProofRateLimit: f.proofRateLimit, AgentURLs: f.agentURLs,
		Now: f.clk.Now, KDF: &kdf, Password: &authtest.CheapPassword, ManualFlush: true, NoSchedules: true,
		JobSchedulePrefix: "scheduled-job:" + f.engineQueue + ":", TransferStall: f.transferStall, TransferMaxBytes: f.transferMaxBytes, TransferQuotas: f.transferQuotas,
		// Event streams re-check their session on each keep-alive: tests
		// see a stream close soon after its session ends.
		EventKeepAlive:     keepAlive,
		ShellTranscriptMax: f.shellTranscriptMax, ShellNoInputRecording: f.shellNoInput, LogDir: f.logDir,
	})
	require.NoError(t, err)
	require.NoError(t, e.Start())
	hs := httptest.NewServer(validated(t, e.Handler()))
	f.noteHost(hs.URL)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		e.Stop(ctx)
	})
	return &engine{srv: e.API, http: hs, cipher: e.Cipher, auth: e.Auth, bus: e.Bus, mgr: e.Workers, devices: e.Devices, core: e}
}

// response is a decoded answer.
type response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
}

func (r response) field(name string) string {
	fields, _ := r.Body["fields"].(map[string]any)
	s, _ := fields[name].(string)
	return s
}

// call sends a request with an optional bearer token and JSON body (a
// string is sent as is, anything else is encoded).
func (f *fixture) call(t *testing.T, base, method, path, token string, body any) response {
	t.Helper()
	return f.untilNotBusy(t, func() response { return f.callOnce(t, base, method, path, token, body) })
}

func (f *fixture) callOnce(t *testing.T, base, method, path, token string, body any) response {
	t.Helper()
	var rdr io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rdr = strings.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		require.NoError(t, err)
		rdr = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, base+path, rdr)
	require.NoError(t, err)
	if rdr != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) response {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	reqBody := requestBody(req)
	res, err := client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	harvest(req, reqBody, res, raw)
	out := response{Status: res.StatusCode, Header: res.Header, Raw: string(raw)}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(raw, &out.Body), "body: %s", raw)
	}
	return out
}

func (f *fixture) do(t *testing.T, method, path, token string, body any) response {
	t.Helper()
	return f.call(t, f.url, method, path, token, body)
}

func (f *fixture) totp(t *testing.T, secret string) string {
	t.Helper()
	code := authtest.TOTP(t, secret, f.clk.Now())
	f.clk.Advance(30 * time.Second) // each code is used once
	return code
}

// setupCode is the first-run setup code `cairn serve` would print: the
// test plays the operator who reads the server's terminal.
func (f *fixture) setupCode(t *testing.T) string {
	t.Helper()
	code := authtest.SetupCode(t, f.engine.auth)
	f.noteFixtureSecret(code)
	return code
}

// bootstrap walks the first-run journey through the API and returns the
// admin's TOTP secret.
func (f *fixture) bootstrap(t *testing.T) string {
	t.Helper()
	code := f.setupCode(t)
	r := f.do(t, "POST", "/api/bootstrap/aegis/setup", "", map[string]any{"passphrase": passphrase, "setup_code": code})
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/bootstrap/admin/setup", "", map[string]any{"username": "admin", "password": adminPassword, "setup_code": code})
	require.Equal(t, 200, r.Status, r.Raw)
	secret := r.Body["mfa"].(map[string]any)["secret"].(string)
	r = f.do(t, "POST", "/api/bootstrap/admin/mfa/verify", "", map[string]any{"pending_token": r.Body["pending_token"], "code": f.totp(t, secret)})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "login_required", r.Body["phase"])
	return secret
}

// login signs in with password and TOTP and returns the login response.
func (f *fixture) login(t *testing.T, base, username, password, secret string) response {
	t.Helper()
	r := f.call(t, base, "POST", "/api/auth/login", "", map[string]any{"username": username, "password": password})
	require.Equal(t, 200, r.Status, r.Raw)
	if setup, ok := r.Body["mfa_setup"].(map[string]any); ok {
		secret = setup["secret"].(string)
	}
	r = f.call(t, base, "POST", "/api/auth/mfa/verify", "", map[string]any{"pending_token": r.Body["pending_token"], "code": f.totp(t, secret)})
	require.Equal(t, 200, r.Status, r.Raw)
	f.credsMu.Lock()
	if f.creds == nil {
		f.creds = map[string]signInCreds{}
	}
	f.creds[r.Body["token"].(string)] = signInCreds{password: password, secret: secret}
	f.credsMu.Unlock()
	return r
}

// reauth is the proof of identity a sensitive action of token's operator
// carries: the password and a fresh TOTP code.
func (f *fixture) reauth(t *testing.T, token string) map[string]any {
	t.Helper()
	f.credsMu.Lock()
	c, ok := f.creds[token]
	f.credsMu.Unlock()
	require.True(t, ok, "the token did not come from f.login")
	return map[string]any{"password": c.password, "totp_code": f.totp(t, c.secret)}
}

// secretOf is the TOTP secret the operator of token (from f.login) set up.
func (f *fixture) secretOf(t *testing.T, token string) string {
	t.Helper()
	f.credsMu.Lock()
	defer f.credsMu.Unlock()
	c, ok := f.creds[token]
	require.True(t, ok, "the token did not come from f.login")
	return c.secret
}

// sudo opens token's session's re-authentication window (POST
// /api/auth/reauth), which account and directory administration needs.
func (f *fixture) sudo(t *testing.T, token string) string {
	t.Helper()
	r := f.do(t, "POST", "/api/auth/reauth", token, f.reauth(t, token))
	require.Equal(t, 200, r.Status, r.Raw)
	return token
}

// with returns body plus the fields of more (a request and its
// re-authentication, say).
func with(body map[string]any, more map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range body {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// admin bootstraps and returns an admin bearer token.
func (f *fixture) admin(t *testing.T) string {
	t.Helper()
	secret := f.bootstrap(t)
	return f.login(t, f.url, "admin", adminPassword, secret).Body["token"].(string)
}

// operator creates a non-admin operator and returns its bearer token.
func (f *fixture) operator(t *testing.T, username string) string {
	t.Helper()
	_, err := f.engine.auth.CreateLocalUser(context.Background(), username, "operator password 1", auth.RoleOperator)
	require.NoError(t, err)
	return f.login(t, f.url, username, "operator password 1", "").Body["token"].(string)
}

func uniqueSlug(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// quietTemporalLogger drops the SDK's client logs.
type quietTemporalLogger struct{}

func (quietTemporalLogger) Debug(string, ...any) {}
func (quietTemporalLogger) Info(string, ...any)  {}
func (quietTemporalLogger) Warn(string, ...any)  {}
func (quietTemporalLogger) Error(string, ...any) {}
