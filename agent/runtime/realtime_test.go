package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime/fakeengine"
)

// socketLog records socket state transitions.
type socketLog struct {
	mu  sync.Mutex
	log []SocketState
}

func (s *socketLog) hook(_, to SocketState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, to)
}

func (s *socketLog) states() []SocketState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SocketState(nil), s.log...)
}

func TestConnectAgentHello(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, Caller, json.RawMessage) (any, error) { return nil, nil }
	for _, tc := range []struct {
		name     string
		handlers []string
		explicit []proto.Capability
		want     []proto.Capability
	}{
		// The socket itself answers a redeploy (agent behaviour 16).
		{name: "no handlers", want: []proto.Capability{proto.CapRedeploy}},
		// The capabilities follow the handlers: one file handler serves
		// the file manager and transfers.
		{name: "from handlers", handlers: []string{proto.EventFileManagement, proto.EventShellOpen, proto.EventRegistryManagement},
			want: []proto.Capability{proto.CapShell, proto.CapFiles, proto.CapTransfers, proto.CapRegistry, proto.CapRedeploy}},
		// The agent's own decision (no registry outside Windows) wins.
		{name: "explicit", handlers: []string{proto.EventRegistryManagement, proto.EventShellOpen},
			explicit: []proto.Capability{proto.CapShell}, want: []proto.Capability{proto.CapShell}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			res := e.enroll(t)
			opts := e.options()
			for _, typ := range tc.handlers {
				require.NoError(t, opts.Handlers.Register(typ, noop))
			}
			opts.Capabilities = tc.explicit
			start(t, opts)
			conn := nextConn(t, e.engine)
			require.Equal(t, proto.ConnectAgent{
				GUID: res.Device.GUID, AgentVersion: "test", Protocol: proto.Version, BootID: "boot-1", Fingerprint: "fp-1", HelperContexts: []string{},
				Capabilities: tc.want,
			}, conn.Hello)
			// The route was cached for the next start.
			require.NotEmpty(t, e.config(t).Agent.Route)
		})
	}
}

func TestSocketNeedsAcceptedAck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mode fakeengine.SocketMode
	}{
		{"rejected", fakeengine.Reject},
		{"missing", fakeengine.NoAck},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			e.enroll(t)
			e.engine.SetSocketModes(tc.mode)
			var states socketLog
			opts := e.options()
			opts.Timing.AckTimeout = 100 * time.Millisecond
			opts.Hooks.Socket = states.hook
			a := start(t, opts)

			nextConn(t, e.engine)
			require.Equal(t, 2, e.engine.Count("socket"))
			require.Equal(t, 2, e.engine.Count("route"), "the failed registration refreshed the route")
			require.Eventually(t, func() bool { return a.Socket().State == SocketConnected }, wait, tick)
			got := states.states()
			require.Equal(t, []SocketState{SocketConnecting, SocketDisconnected, SocketConnecting, SocketConnected}, got,
				"never connected before the accepted ack")
		})
	}
}

func TestDialRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		status    int
		code      string
		refreshes int
	}{
		{"wrong worker", http.StatusMisdirectedRequest, proto.CodeWrongWorker, 0},
		{"stale token", http.StatusUnauthorized, proto.CodeTokenExpired, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			e.enroll(t)
			e.engine.RefuseSocket(tc.status, tc.code)
			start(t, e.options())
			nextConn(t, e.engine)
			require.Equal(t, 1, e.engine.Count("socket_refused"))
			require.Equal(t, 2, e.engine.Count("route"))
			require.Equal(t, tc.refreshes, e.engine.Refreshes())
		})
	}
}

func TestReadIdleReconnects(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	var states socketLog
	opts := e.options()
	// Pings come ten times per idle period: only a stall of most of a
	// second between two of them could end the socket early.
	const idle = time.Second
	opts.Timing.ReadIdle = idle
	opts.Hooks.Socket = states.hook
	start(t, opts)

	first := nextConn(t, e.engine)
	// Pings keep it alive well past the deadline, each answered by a pong.
	ctx := t.Context()
	began := time.Now()
	for i := 0; time.Since(began) < 2*idle; i++ {
		id := "p" + strconv.Itoa(i)
		require.NoError(t, first.Send(ctx, proto.Envelope{Type: proto.MsgPing, ID: id}))
		env, err := first.Read(ctx)
		require.NoError(t, err)
		require.Equal(t, proto.Envelope{Type: proto.MsgPong, ID: id}, env)
		select {
		case <-first.Done():
			t.Fatal("the socket closed although pings arrived")
		case <-time.After(idle / 10):
		}
	}
	// Silence: the agent gives up on the socket and comes back.
	routes := e.engine.Count("route")
	second := nextConn(t, e.engine)
	<-first.Done()
	require.Equal(t, routes+1, e.engine.Count("route"))
	require.NotNil(t, second)
	require.Contains(t, states.states(), SocketDisconnected)
}

func TestSocketRequests(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	opts := e.options()
	handled := make(chan string, 1)
	require.NoError(t, opts.Handlers.Register("echo", func(_ context.Context, call Caller, payload json.RawMessage) (any, error) {
		require.NotNil(t, call)
		return map[string]json.RawMessage{"echo": payload}, nil
	}))
	require.NoError(t, opts.Handlers.Register("fails", func(context.Context, Caller, json.RawMessage) (any, error) {
		return nil, &proto.Error{Code: "busy", Message: "try later"}
	}))
	require.NoError(t, opts.Handlers.Register("notify", func(_ context.Context, _ Caller, payload json.RawMessage) (any, error) {
		handled <- string(payload)
		return nil, errors.New("not replied: the event had no ID")
	}))
	start(t, opts)
	conn := nextConn(t, e.engine)
	ctx := t.Context()

	for _, tc := range []struct {
		send proto.Envelope
		want string
	}{
		{proto.Envelope{Type: "quick_job_run", ID: "r1", Payload: json.RawMessage(`{}`)},
			`{"error":"unsupported","message":"this agent does not support \"quick_job_run\""}`},
		{proto.Envelope{Type: "echo", ID: "r2", Payload: json.RawMessage(`{"a":1}`)}, `{"echo":{"a":1}}`},
		{proto.Envelope{Type: "fails", ID: "r3"}, `{"error":"busy","message":"try later"}`},
	} {
		require.NoError(t, conn.Send(ctx, tc.send))
		env, err := conn.Read(ctx)
		require.NoError(t, err)
		require.Equal(t, proto.MsgReply, env.Type)
		require.Equal(t, tc.send.ID, env.ID)
		require.JSONEq(t, tc.want, string(env.Payload))
	}

	// Events without an ID get no reply, known or not.
	require.NoError(t, conn.Send(ctx, proto.Envelope{Type: "vnc_refresh"}))
	require.NoError(t, conn.Send(ctx, proto.Envelope{Type: "notify", Payload: json.RawMessage(`"x"`)}))
	require.Equal(t, `"x"`, <-handled)
	require.NoError(t, conn.Send(ctx, proto.Envelope{Type: proto.MsgPing, ID: "after"}))
	env, err := conn.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, proto.Envelope{Type: proto.MsgPong, ID: "after"}, env, "nothing was sent in between")
}

func TestHandlersRegister(t *testing.T) {
	t.Parallel()
	h := NewHandlers()
	fn := func(context.Context, Caller, json.RawMessage) (any, error) { return nil, nil }
	require.NoError(t, h.Register("file_management_request", fn))
	for _, tc := range []struct {
		typ string
		fn  Handler
	}{
		{"file_management_request", fn}, // duplicate
		{proto.MsgPing, fn},
		{proto.MsgConnectAgentAck, fn},
		{"", fn},
		{"x", nil},
	} {
		require.Error(t, h.Register(tc.typ, tc.fn), tc.typ)
	}
}

// A request runs only under the Engine's grant for exactly it (issue 21):
// one without a grant, with a forged one, or with one for another device,
// operation or payload reaches no handler and is answered
// signature_invalid (a row planted in the Engine's database, or a request
// injected past its authorisation).
func TestSocketRequestsNeedAGrant(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	opts := e.options()
	var ran atomic.Int64
	require.NoError(t, opts.Handlers.Register("file_management_request", func(context.Context, Caller, json.RawMessage) (any, error) {
		ran.Add(1)
		return map[string]bool{"done": true}, nil
	}))
	start(t, opts)
	conn := nextConn(t, e.engine)
	ctx := t.Context()
	guid := conn.Hello.GUID
	req := proto.Envelope{Type: "file_management_request", ID: "r1", OperationID: "op-1", Payload: json.RawMessage(`{"action":"write_text","path":"/etc/cron.d/x"}`)}
	forged := *e.engine.Grant(guid, req)
	forged.Signature = append([]byte(nil), forged.Signature...)
	forged.Signature[0] ^= 1
	harmless := req
	harmless.Payload = json.RawMessage(`{"action":"list","path":"/tmp"}`)
	for name, grant := range map[string]*proto.Signed{
		"none":              nil,
		"forged":            &forged,
		"another device":    e.engine.Grant("another-device", req),
		"another payload":   e.engine.Grant(guid, harmless),
		"another operation": e.engine.Grant(guid, proto.Envelope{Type: req.Type, OperationID: "op-2", Payload: req.Payload}),
	} {
		send := req
		send.Grant = grant
		require.NoError(t, conn.SendUngranted(ctx, send))
		env, err := conn.Read(ctx)
		require.NoError(t, err)
		require.Equal(t, send.ID, env.ID)
		require.Contains(t, string(env.Payload), `"error":"signature_invalid"`, name)
	}
	require.Zero(t, ran.Load(), "a handler ran without a valid grant")

	require.NoError(t, conn.Send(ctx, req)) // the fake signs it, as the Engine does
	env, err := conn.Read(ctx)
	require.NoError(t, err)
	require.JSONEq(t, `{"done":true}`, string(env.Payload))
	require.Equal(t, int64(1), ran.Load())
}

// reportLog records what the socket told its role (system:api_websocket).
type reportLog struct {
	mu   sync.Mutex
	errs []error
}

func (r *reportLog) Report(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

func (r *reportLog) all() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...)
}

func TestSocketReportsItsRole(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	e.engine.SetSocketModes(fakeengine.Reject, fakeengine.Reject)
	var reports reportLog
	opts := e.options()
	opts.Timing.AckTimeout = 100 * time.Millisecond
	opts.SocketRole = &reports
	a := start(t, opts)
	nextConn(t, e.engine)
	require.Eventually(t, func() bool { return a.Socket().State == SocketConnected && len(reports.all()) == 3 }, wait, tick)
	got := reports.all()
	require.Error(t, got[0], "a refused registration is a failed attempt")
	require.Error(t, got[1])
	require.NoError(t, got[2], "the accepted ack is a success")
}
