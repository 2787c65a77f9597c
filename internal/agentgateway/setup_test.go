package agentgateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// fixture is one database with sites and devices; replicas are Engine
// processes over it.
type fixture struct {
	store   *db.Store
	devices map[string]devicetrust.Identity
	mu      sync.Mutex
}

func setup(t testing.TB) *fixture {
	t.Helper()
	return &fixture{store: pgtest.NewDB(t), devices: map[string]devicetrust.Identity{}}
}

// device inserts a device in site slug (creating the site) and returns the
// identity the Device middleware would give its requests.
func (f *fixture) device(t testing.TB, slug string) devicetrust.Identity {
	t.Helper()
	ctx := context.Background()
	site, err := f.store.SiteGetBySlug(ctx, slug)
	if db.IsNoRows(err) {
		site, err = f.store.SiteInsert(ctx, db.SiteInsertParams{Name: "Site " + slug, Slug: slug})
		if db.IsUniqueViolation(err, "") { // a parallel subtest made it first
			site, err = f.store.SiteGetBySlug(ctx, slug)
		}
	}
	require.NoError(t, err)
	guid := uuid.NewString()
	row, err := f.store.DeviceInsert(ctx, db.DeviceInsertParams{Guid: cairn.DeviceGUID(guid), Hostname: "host-" + guid[:8], SiteID: site.ID})
	require.NoError(t, err)
	dev := devicetrust.Identity{GUID: cairn.DeviceGUID(guid), AgentID: "agent-" + guid[:8], Hostname: row.Hostname, SiteID: site.ID, SiteSlug: slug,
		TokenVersion: row.TokenVersion}
	f.mu.Lock()
	f.devices[guid] = dev
	f.mu.Unlock()
	return dev
}

// socket is the device's socket record.
func (f *fixture) socket(t *testing.T, guid string, freshFor time.Duration) db.DeviceSocketGetRow {
	t.Helper()
	row, err := f.store.DeviceSocketGet(context.Background(), db.DeviceSocketGetParams{Guid: guid, FreshSeconds: freshFor.Seconds()})
	require.NoError(t, err)
	return row
}

// eventually waits for cond, which reads the database.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, 20*time.Millisecond, msg)
}

// sites is a SiteRunner over a fixed set of slugs (nil: all).
type sites map[string]bool

func (s sites) Runs(slug string) bool { return s == nil || s[slug] }

// replica is one Engine process: its own bus (LISTEN connection), hub and
// HTTP server whose handler plays the Device middleware by taking the
// identity named in the guid query parameter.
type replica struct {
	hub      *agentgateway.Hub
	url      string
	statuses <-chan events.Event
	stop     context.CancelFunc
	// ended counts the socket handlers that returned (their cleanup done).
	ended *atomic.Int64
}

func (f *fixture) replica(t testing.TB, id string, runs agentgateway.SiteRunner, opts agentgateway.Options) *replica {
	t.Helper()
	if runs == nil {
		runs = sites(nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	bus := events.NewBus(f.store, log)
	up := bus.OnControl("test-listening")
	go bus.Run(ctx)
	select {
	case <-up:
	case <-time.After(10 * time.Second):
		t.Fatal("bus did not start listening")
	}
	statuses, unsubscribe := bus.Subscribe(func(e events.Event) bool { return e.Type == events.TypeAgentStatusChanged })
	opts.Log = log
	if opts.Codes == nil {
		// The operation codes the command path declares (engine's
		// capability_operations.go); "unauthorized" is not among them.
		opts.Codes = cairn.MustCodeBook(cairn.CoreCodes, []cairn.Code{
			{ID: proto.CodeOpMismatch, Status: http.StatusConflict, Agent: true},
			{ID: proto.CodeOpNotFound, Status: http.StatusNotFound, Agent: true},
			{ID: proto.CodeOpFailed, Status: http.StatusBadGateway, Agent: true},
		})
	}
	hub := agentgateway.New(id, f.store, bus, runs, opts)
	ran := make(chan struct{})
	go func() { hub.Run(ctx); close(ran) }()
	ended := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		dev := f.devices[r.URL.Query().Get("guid")]
		f.mu.Unlock()
		hub.Serve(w, r, dev)
		ended.Add(1)
	}))
	t.Cleanup(func() {
		cancel()
		<-ran
		unsubscribe()
		srv.CloseClientConnections()
		srv.Close()
	})
	return &replica{hub: hub, url: "ws" + strings.TrimPrefix(srv.URL, "http") + proto.PathRealtimeWS, statuses: statuses, stop: cancel, ended: ended}
}

// status waits for the next agent_status_changed event.
func (r *replica) status(t *testing.T) map[string]any {
	t.Helper()
	select {
	case e := <-r.statuses:
		var data map[string]any
		require.NoError(t, json.Unmarshal(e.Data, &data))
		// Scoped to the device's site: operators of other sites never see it.
		require.NotZero(t, e.SiteID)
		require.EqualValues(t, data["site_id"], e.SiteID)
		return data
	case <-time.After(10 * time.Second):
		t.Fatal("no agent_status_changed event")
		return nil
	}
}

// agent is a test agent's end of a socket.
type agent struct {
	t  *testing.T
	ws *websocket.Conn
}

// dial opens a socket to r as dev, without connect_agent.
func dial(t *testing.T, r *replica, dev devicetrust.Identity) *agent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, res, err := websocket.Dial(ctx, r.url+"?guid="+string(dev.GUID), nil)
	require.NoError(t, err)
	if res.Body != nil {
		_ = res.Body.Close()
	}
	ws.SetReadLimit(8 << 20)
	t.Cleanup(func() { _ = ws.CloseNow() })
	return &agent{t: t, ws: ws}
}

// connect dials and registers as dev, requiring an accepted ack.
func connect(t *testing.T, r *replica, dev devicetrust.Identity, helpers ...string) *agent {
	t.Helper()
	a := dial(t, r, dev)
	a.send(proto.MsgConnectAgent, "", proto.ConnectAgent{GUID: string(dev.GUID), AgentVersion: "1.0.0", Protocol: proto.Version,
		BootID: "boot-1", HelperContexts: helpers})
	ack := a.ack()
	require.True(t, ack.Accepted, ack.Reason)
	return a
}

func (a *agent) send(typ, id string, payload any) {
	a.t.Helper()
	var raw json.RawMessage
	if payload != nil {
		b, err := json.Marshal(payload)
		require.NoError(a.t, err)
		raw = b
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(a.t, wsjson.Write(ctx, a.ws, proto.Envelope{Type: typ, ID: id, Payload: raw}))
}

// read returns the next message, or the error that ended the socket.
func (a *agent) read(timeout time.Duration) (proto.Envelope, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var env proto.Envelope
	err := wsjson.Read(ctx, a.ws, &env)
	return env, err
}

// next returns the next message that is not a ping.
func (a *agent) next() proto.Envelope {
	a.t.Helper()
	for {
		env, err := a.read(10 * time.Second)
		require.NoError(a.t, err)
		if env.Type != proto.MsgPing {
			return env
		}
	}
}

func (a *agent) ack() proto.ConnectAgentAck {
	a.t.Helper()
	env := a.next()
	require.Equal(a.t, proto.MsgConnectAgentAck, env.Type)
	var ack proto.ConnectAgentAck
	require.NoError(a.t, json.Unmarshal(env.Payload, &ack))
	return ack
}

// closed waits until the Engine ends the socket (skipping messages) and
// returns the close frame (code -1 when it ended without one).
func (a *agent) closed(within time.Duration) websocket.CloseError {
	a.t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := time.Until(deadline)
		require.Positive(a.t, left, "socket still open")
		_, err := a.read(left)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if errors.As(err, &ce) {
			return ce
		}
		require.NotErrorIs(a.t, err, context.DeadlineExceeded, "socket still open")
		return websocket.CloseError{Code: -1, Reason: err.Error()}
	}
}

func payload(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
