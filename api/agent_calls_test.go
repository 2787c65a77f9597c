package api_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// socketCall sends one call on c and returns its reply (pings skipped).
func socketCall(t *testing.T, c *websocket.Conn, id, name string, body any) proto.CallReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	payload, err := json.Marshal(proto.Call{Name: name, Body: raw})
	require.NoError(t, err)
	require.NoError(t, writeEnvelope(ctx, c, proto.Envelope{Type: proto.MsgCall, ID: id, Payload: payload}))
	for {
		env := readEnvelope(ctx, t, c)
		if env.Type == proto.MsgPing {
			continue
		}
		require.Equal(t, proto.MsgCallReply, env.Type, string(env.Payload))
		require.Equal(t, id, env.ID)
		var r proto.CallReply
		require.NoError(t, json.Unmarshal(env.Payload, &r))
		return r
	}
}

// Issue 28: a heartbeat over the realtime socket is answered with what
// POST /api/agent/heartbeat answers (metadata acks, the script-signing
// trust chain, the interval), records the beat (last_seen, written by the
// flush) and refuses a bad body as the route does; a metadata read over
// the socket is the route's answer too.
func TestHeartbeatCallAnswersWhatTheRouteAnswers(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "calls")
	overSocket := f.enrolled(t, admin, site, "calls-socket")
	overREST := f.enrolled(t, admin, site, "calls-rest")
	c, ack := overSocket.connectAck(t)
	defer c.CloseNow()
	require.True(t, ack.Accepted, ack.Reason)
	require.ElementsMatch(t, []string{proto.CallHeartbeat, proto.CallStatus, proto.CallMetadataRead}, ack.Calls)

	past := f.clk.Now().UTC().Add(-time.Hour)
	hb := func() proto.Heartbeat {
		return proto.Heartbeat{SentAt: f.clk.Now().UTC(), AgentVersion: "1.2.3", BootID: "boot-1",
			Metrics:        proto.Metrics{CPUPercent: 3, UptimeSeconds: 99, LoggedInUsers: []string{}},
			MetadataFields: []proto.MetadataWrite{{FieldNumber: 30, Value: "from agent", ModifiedAt: past}, {FieldNumber: 32, Value: "bad\x1b", ModifiedAt: past}}}
	}
	rest := overREST.device(t, "POST", proto.PathHeartbeat, hb())
	require.Equal(t, 200, rest.Status, rest.Raw)
	var want proto.HeartbeatResponse
	require.NoError(t, json.Unmarshal([]byte(rest.Raw), &want))

	r := socketCall(t, c, "hb-1", proto.CallHeartbeat, hb())
	require.Nil(t, r.Error)
	var got proto.HeartbeatResponse
	require.NoError(t, json.Unmarshal(r.Body, &got))
	require.NotNil(t, want.ScriptSigning, "the route answers the trust chain")
	require.Len(t, want.MetadataFieldAcks, 2)
	want.ServerTime, got.ServerTime = time.Time{}, time.Time{}
	require.Equal(t, want, got)
	require.Equal(t, "from agent", f.metadataValue(t, admin, overSocket.guid, 30)["value"])

	// The beat is recorded: the flush writes last_seen.
	require.NoError(t, f.engine.devices.Flush(context.Background()))
	d := f.do(t, "GET", "/api/devices/"+overSocket.guid, admin, nil)
	require.Equal(t, 200, d.Status, d.Raw)
	require.NotNil(t, d.Body["last_seen"], "no last_seen after a socket heartbeat")
	require.Equal(t, "1.2.3", d.Body["agent_version"])

	// A metadata read over the socket is the route's answer.
	restRead := overSocket.device(t, "GET", proto.PathAgentMetadata(30), nil)
	require.Equal(t, 200, restRead.Status, restRead.Raw)
	r = socketCall(t, c, "md-1", proto.CallMetadataRead, proto.MetadataRead{FieldNumber: 30})
	require.Nil(t, r.Error)
	require.JSONEq(t, restRead.Raw, string(r.Body))

	// Bad bodies are refused as the route refuses them, field by field.
	for i, tc := range []struct {
		name string
		body any
	}{
		{proto.CallHeartbeat, map[string]any{"metrics": map[string]any{"cpu_percent": -1}}},
		{proto.CallHeartbeat, map[string]any{"no_such_field": 1}},
		{proto.CallMetadataRead, proto.MetadataRead{FieldNumber: 100000}},
	} {
		r := socketCall(t, c, "bad-"+string(rune('a'+i)), tc.name, tc.body)
		require.NotNil(t, r.Error, "case %d", i)
		require.Equal(t, "validation_failed", r.Error.Code, "case %d", i)
		require.NotEmpty(t, r.Error.Fields, "case %d", i)
		if tc.name == proto.CallHeartbeat {
			restBad := overREST.device(t, "POST", proto.PathHeartbeat, tc.body)
			require.Equal(t, 400, restBad.Status, restBad.Raw)
			require.Equal(t, restBad.Body["fields"], toAny(t, r.Error.Fields), "case %d", i)
		}
	}
}

func toAny(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// socketGate forwards agent traffic to the Engine, refusing the realtime
// socket's upgrade until opened, and counts REST heartbeats.
type socketGate struct {
	mu      sync.Mutex
	open    bool
	restHBs int
	// conns are the agent's HTTP connections that are neither closed nor
	// taken over by the socket (ConnState).
	conns map[net.Conn]bool
}

// track is the front server's ConnState.
func (g *socketGate) track(c net.Conn, st http.ConnState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conns == nil {
		g.conns = map[net.Conn]bool{}
	}
	switch st {
	case http.StateHijacked, http.StateClosed:
		delete(g.conns, c)
	default:
		g.conns[c] = true
	}
}

func (g *socketGate) httpConns() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns)
}

func (g *socketGate) handler(engineURL string) http.Handler {
	target, _ := url.Parse(engineURL)
	rp := httputil.NewSingleHostReverseProxy(target)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		open := g.open
		if r.URL.Path == proto.PathHeartbeat {
			g.restHBs++
		}
		g.mu.Unlock()
		if r.URL.Path == proto.PathRealtimeWS && !open {
			http.Error(w, `{"error":"unavailable","message":"closed by the test"}`, http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	})
}

func (g *socketGate) restHeartbeats() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.restHBs
}

// callLog records the agent runtime's calls (Hooks.Call).
type callLog struct {
	mu     sync.Mutex
	socket map[string]int
	rest   map[string]int
}

func (l *callLog) record(name string, socket bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if socket {
		l.socket[name]++
	} else {
		l.rest[name]++
	}
}

func (l *callLog) counts(name string) (socket, rest int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.socket[name], l.rest[name]
}

// Issue 28: the real agent runtime against the Engine heartbeats over
// REST while it has no socket, and over the socket (no HTTP request) once
// the socket is up; the Engine records those beats (last_seen) and acks
// a metadata write they carry.
func TestAgentHeartbeatsOverTheSocketWhenConnected(t *testing.T) {
	t.Parallel()
	gate := &socketGate{}
	var engineURL string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { gate.handler(engineURL).ServeHTTP(w, r) }))
	srv.Config.ConnState = gate.track
	srv.Start()
	t.Cleanup(srv.Close)
	f := &fixture{store: pgtest.NewDB(t), clk: authtest.NewClock(), github: newFakeGitHub(t), agentURLs: []string{srv.URL}}
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	engineURL = f.url
	admin := f.admin(t)
	site := f.createSite(t, admin, "sockhb")
	code := f.enrollmentCode(t, admin, site)

	calls := &callLog{socket: map[string]int{}, rest: map[string]int{}}
	store := f.runRuntimeAgent(t, admin, code, srv.URL, runtime.Identity{Hostname: "sockhb-01", Fingerprint: "fp-sockhb-01", BootID: "boot-1"},
		runtime.Hooks{Call: calls.record})
	saved, err := store.Load()
	require.NoError(t, err)
	guid := saved.Agent.GUID

	// No socket: heartbeats are REST requests.
	require.Eventually(t, func() bool {
		_, rest := calls.counts(proto.CallHeartbeat)
		return rest >= 2 && gate.restHeartbeats() >= 2
	}, 2*time.Minute, 10*time.Millisecond, "no REST heartbeat without a socket")
	sock, _ := calls.counts(proto.CallHeartbeat)
	require.Zero(t, sock)

	// The socket opens: heartbeats move onto it. A metadata write queued
	// meanwhile travels with one and is acknowledged.
	_, err = store.Update(func(c *agent.Config) error {
		_, err := c.SetMetadata(40, "queued by the agent", f.clk.Now())
		return err
	})
	require.NoError(t, err)
	gate.mu.Lock()
	gate.open = true
	gate.mu.Unlock()
	require.Eventually(t, func() bool {
		sock, _ := calls.counts(proto.CallHeartbeat)
		return sock >= 1
	}, 2*time.Minute, 10*time.Millisecond, "heartbeats never went over the socket")
	restBefore := gate.restHeartbeats()
	_, restHookBefore := calls.counts(proto.CallHeartbeat)
	require.Eventually(t, func() bool {
		sock, _ := calls.counts(proto.CallHeartbeat)
		return sock >= 4
	}, 2*time.Minute, 10*time.Millisecond)
	require.Equal(t, restBefore, gate.restHeartbeats(), "a REST heartbeat while the socket was up")
	_, restHook := calls.counts(proto.CallHeartbeat)
	require.Equal(t, restHookBefore, restHook)
	statusSock, _ := calls.counts(proto.CallStatus)
	require.Positive(t, statusSock, "the running status went over the socket")
	// One connection per agent: the keep-alive that enrollment, the
	// refresh and the REST heartbeats used is closed once the socket is
	// up (before, the heartbeats kept it open beside the socket).
	require.Eventually(t, func() bool { return gate.httpConns() == 0 }, 2*time.Minute, 10*time.Millisecond,
		"an HTTP connection stays open beside the socket")

	require.Eventually(t, func() bool {
		c, err := store.Load()
		return err == nil && len(c.PendingMetadata()) == 0
	}, 2*time.Minute, 10*time.Millisecond, "the metadata write was never acknowledged")
	require.Equal(t, "queued by the agent", f.metadataValue(t, admin, guid, 40)["value"])

	// The beats are recorded: last_seen moves with the Engine's clock.
	f.clk.Advance(time.Minute)
	moved := f.clk.Now()
	require.Eventually(t, func() bool {
		if err := f.engine.devices.Flush(context.Background()); err != nil {
			return false
		}
		d := f.do(t, "GET", "/api/devices/"+guid, admin, nil)
		s, _ := d.Body["last_seen"].(string)
		at, err := time.Parse(time.RFC3339Nano, s)
		return err == nil && !at.Before(moved)
	}, 2*time.Minute, 10*time.Millisecond, "last_seen did not follow the socket heartbeats")
	sock, _ = calls.counts(proto.CallHeartbeat)
	require.Positive(t, sock)
	require.Equal(t, restBefore, gate.restHeartbeats(), "a REST heartbeat while the socket was up")
}
