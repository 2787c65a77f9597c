package api_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cairn-rmm/cairn"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
	"github.com/cairn-rmm/cairn/agent/transport"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

type emptyCollector struct{}

func (emptyCollector) Collect(context.Context) proto.Inventory { return proto.Inventory{} }
func (emptyCollector) Metrics(context.Context) proto.Metrics   { return proto.Metrics{} }

// dropProxy forwards agent traffic to the Engine and loses the answer to
// the first token refresh after arm: the Engine has rotated the token, the
// agent never hears of it.
type dropProxy struct {
	mu      sync.Mutex
	armed   bool
	dropped bool
	// refreshed: a refresh succeeded after the drop; worked: a Device call
	// (a REST heartbeat or the socket's upgrade) succeeded after that.
	refreshed, worked bool
}

func (p *dropProxy) handler(engineURL string) http.Handler {
	target, _ := url.Parse(engineURL)
	rp := httputil.NewSingleHostReverseProxy(target)
	errLost := errors.New("answer lost")
	rp.ModifyResponse = func(resp *http.Response) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		path := resp.Request.URL.Path
		switch {
		case path == proto.PathTokenRefresh && p.armed && !p.dropped:
			p.dropped = true
			return errLost
		case path == proto.PathTokenRefresh && p.dropped && resp.StatusCode == 200:
			p.refreshed = true
		case path == proto.PathHeartbeat && p.refreshed && resp.StatusCode < 300,
			path == proto.PathRealtimeWS && p.refreshed && resp.StatusCode == http.StatusSwitchingProtocols:
			// A heartbeat, or the socket that carries them (issue 28),
			// accepted under the new token.
			p.worked = true
		}
		return nil
	}
	rp.ErrorHandler = func(http.ResponseWriter, *http.Request, error) {
		// Cut the connection without an answer, as a crash or a network
		// failure would.
		panic(http.ErrAbortHandler)
	}
	return rp
}

func (p *dropProxy) state() (dropped, refreshed, worked bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped, p.refreshed, p.worked
}

// Issue 13 item 9: a lost refresh answer leaves the real agent runtime
// working. The agent retries with the token the Engine already rotated,
// signed by its key, within the grace window, and gets a pair; before,
// that retry revoked its token family and stranded the device until an
// administrator approved it again.
func TestDroppedRefreshAnswerLeavesTheAgentWorking(t *testing.T) {
	t.Parallel()
	proxy := &dropProxy{}
	var engineURL string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxy.handler(engineURL).ServeHTTP(w, r)
	}))
	srv.Start()
	t.Cleanup(srv.Close)
	f := &fixture{store: pgtest.NewDB(t), clk: authtest.NewClock(), github: newFakeGitHub(t), agentURLs: []string{srv.URL}}
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	engineURL = f.url
	admin := f.admin(t)
	site := f.createSite(t, admin, "drop")
	code := f.enrollmentCode(t, admin, site)

	store := f.runRuntimeAgent(t, admin, code, srv.URL, runtime.Identity{Hostname: "drop-01", Fingerprint: "fp-drop-01"}, runtime.Hooks{})

	// A trust change bumps the token version: the agent's next heartbeat
	// is told to refresh, and the answer to that refresh is lost.
	saved, err := store.Load()
	require.NoError(t, err)
	guid := saved.Agent.GUID
	require.NotEmpty(t, guid)
	proxy.mu.Lock()
	proxy.armed = true
	proxy.mu.Unlock()
	d, err := f.store.DeviceGetByGUID(t.Context(), cairn.DeviceGUID(guid))
	require.NoError(t, err)
	_, err = f.store.DeviceTrustSet(t.Context(), db.DeviceTrustSetParams{Guid: cairn.DeviceGUID(guid), TrustState: "active", Now: f.clk.Now(),
		FromState: d.TrustState, FromVersion: d.TokenVersion})
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		_, _, worked := proxy.state()
		return worked
	}, 2*time.Minute, 10*time.Millisecond, "the agent never worked again after the lost refresh answer")
	dropped, refreshed, _ := proxy.state()
	require.True(t, dropped)
	require.True(t, refreshed)
	now, err := store.Load()
	require.NoError(t, err)
	require.NotEmpty(t, now.RefreshToken, "the agent kept its tokens")
	require.NotEqual(t, saved.RefreshToken, now.RefreshToken)
}

// runRuntimeAgent enrolls the real agent runtime (agent/runtime, in this
// process) with code through serverURL (a proxy the test controls in
// front of the Engine), approves it as admin and runs its loop with
// hooks until the test ends; it returns the agent's config store.
// Proofs are dated on the Engine's test clock; the agent's own timers
// (backoff, expiry) run on the wall clock.
func (f *fixture) runRuntimeAgent(t *testing.T, admin, code, serverURL string, id runtime.Identity, hooks runtime.Hooks) runtime.FileStore {
	t.Helper()
	path := filepath.Join(t.TempDir(), agent.FileName)
	cfg := agent.Default()
	cfg.ApplyEnrollment(code, serverURL)
	require.NoError(t, agent.Create(path, "enroll", cfg))
	store := runtime.FileStore{Path: path, Writer: "run"}
	newClient := func(c *agent.Config) (*transport.Client, error) {
		key, err := c.PrivateKey()
		if err != nil {
			return nil, err
		}
		return transport.New(transport.Config{ServerURL: c.ServerURL, Key: key, AgentVersion: "test", Now: f.clk.Now})
	}
	client, err := newClient(cfg)
	require.NoError(t, err)
	timing := runtime.Timing{EnrollPoll: 20 * time.Millisecond, HeartbeatInterval: 50 * time.Millisecond, HeartbeatJitter: -1,
		RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, ReconnectMin: 10 * time.Millisecond, ReconnectMax: 50 * time.Millisecond}
	approval := make(chan string, 1)
	enrolled := make(chan error, 1)
	go func() {
		_, err := runtime.Enroll(t.Context(), store, client, runtime.EnrollOptions{Identity: id, Version: "test", Timing: timing,
			Requested: func(id, _ string) {
				select {
				case approval <- id:
				default:
				}
			}})
		enrolled <- err
	}()
	r := f.do(t, "POST", "/api/admin/device-approvals/"+<-approval+"/approve", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.NoError(t, <-enrolled)

	a, err := runtime.New(runtime.Options{Store: store, Identity: id, Version: "test", Collector: emptyCollector{},
		Timing: timing, NewClient: newClient, Hooks: hooks})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return store
}
