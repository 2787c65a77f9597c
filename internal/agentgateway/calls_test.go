package agentgateway_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// callSetup is a replica whose hub answers the call "echo" with the
// calling device and its body, and "refuse" with a validation error, on a
// clock the test moves.
type callSetup struct {
	f     *fixture
	r     *replica
	clock *testClock
	mu    sync.Mutex
	calls []devicetrust.Identity
}

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type echoed struct {
	GUID string          `json:"guid"`
	Body json.RawMessage `json:"body"`
}

func setupCalls(t *testing.T) *callSetup {
	t.Helper()
	s := &callSetup{f: setup(t), clock: &testClock{now: time.Now()}}
	s.r = s.f.replica(t, "calls", nil, agentgateway.Options{Now: s.clock.Now})
	s.r.hub.HandleCall("echo", func(_ context.Context, dev devicetrust.Identity, body json.RawMessage) (any, error) {
		s.mu.Lock()
		s.calls = append(s.calls, dev)
		s.mu.Unlock()
		return echoed{GUID: string(dev.GUID), Body: body}, nil
	})
	s.r.hub.HandleCall("refuse", func(context.Context, devicetrust.Identity, json.RawMessage) (any, error) {
		return nil, cairn.Invalid("metrics.cpu_percent", "must be a non-negative number")
	})
	return s
}

// device is a device whose access token expires in an hour on the clock.
func (s *callSetup) device(t *testing.T) devicetrust.Identity {
	dev := s.f.device(t, "calls")
	dev.ExpiresAt = s.clock.Now().Add(time.Hour)
	s.f.mu.Lock()
	s.f.devices[string(dev.GUID)] = dev
	s.f.mu.Unlock()
	return dev
}

// connectAs registers dev with protocol and returns the socket and ack.
func (s *callSetup) connectAs(t *testing.T, dev devicetrust.Identity, protocol int) (*agent, proto.ConnectAgentAck) {
	a := dial(t, s.r, dev)
	a.send(proto.MsgConnectAgent, "", proto.ConnectAgent{GUID: string(dev.GUID), AgentVersion: "1.0.0", Protocol: protocol, BootID: "boot-1"})
	ack := a.ack()
	require.True(t, ack.Accepted, ack.Reason)
	return a, ack
}

// call sends one call and returns its reply.
func (a *agent) call(id, name string, body any) proto.CallReply {
	a.t.Helper()
	a.send(proto.MsgCall, id, proto.Call{Name: name, Body: payload(a.t, body)})
	env := a.next()
	require.Equal(a.t, proto.MsgCallReply, env.Type)
	require.Equal(a.t, id, env.ID)
	var r proto.CallReply
	require.NoError(a.t, json.Unmarshal(env.Payload, &r))
	return r
}

// Issue 28: an agent of protocol 5 learns the calls the hub answers from
// the ack, and a call is answered on its socket for the device the socket
// was opened as, with the handler's answer or its error body.
func TestCallsAreAnsweredOnTheSocket(t *testing.T) {
	t.Parallel()
	s := setupCalls(t)
	dev := s.device(t)
	a, ack := s.connectAs(t, dev, proto.Version)
	require.Equal(t, []string{"echo", "refuse"}, ack.Calls)

	r := a.call("c1", "echo", map[string]int{"n": 7})
	require.Nil(t, r.Error)
	var got echoed
	require.NoError(t, json.Unmarshal(r.Body, &got))
	require.Equal(t, string(dev.GUID), got.GUID)
	require.JSONEq(t, `{"n":7}`, string(got.Body))
	s.mu.Lock()
	require.Len(t, s.calls, 1)
	require.Equal(t, dev.GUID, s.calls[0].GUID)
	s.mu.Unlock()

	r = a.call("c2", "refuse", struct{}{})
	require.Nil(t, r.Body)
	require.Equal(t, &proto.Error{Code: cairn.ECodeValidation, Message: "request is invalid",
		Fields: map[string]string{"metrics.cpu_percent": "must be a non-negative number"}}, r.Error)

	r = a.call("c3", "no_such_call", struct{}{})
	require.NotNil(t, r.Error)
	require.Equal(t, cairn.ECodeNotFound, r.Error.Code)
}

// A call carries no DPoP proof of its own: it rides on the socket's
// authentication, which holds no longer than the access token the socket
// was opened with (or, once a sweep saw the device refresh, its newest).
// Past that, a call is refused with token_expired and its handler never
// runs; the agent then calls REST, which refreshes.
func TestCallsNeedAValidToken(t *testing.T) {
	t.Parallel()
	s := setupCalls(t)
	dev := s.device(t)
	a, _ := s.connectAs(t, dev, proto.Version)
	require.Nil(t, a.call("c1", "echo", struct{}{}).Error)
	s.clock.advance(2 * time.Hour)
	r := a.call("c2", "echo", struct{}{})
	require.NotNil(t, r.Error)
	require.Equal(t, proto.CodeTokenExpired, r.Error.Code)
	s.mu.Lock()
	require.Len(t, s.calls, 1, "the handler ran past the token's expiry")
	s.mu.Unlock()
}

// An agent older than protocol 5 is offered no calls, and a call on its
// socket is refused: it keeps to the REST routes.
func TestOlderAgentsAreOfferedNoCalls(t *testing.T) {
	t.Parallel()
	s := setupCalls(t)
	dev := s.device(t)
	a, ack := s.connectAs(t, dev, proto.CallsVersion-1)
	require.Empty(t, ack.Calls)
	r := a.call("c1", "echo", struct{}{})
	require.NotNil(t, r.Error)
	require.Equal(t, cairn.ECodeNotFound, r.Error.Code)
	s.mu.Lock()
	require.Empty(t, s.calls)
	s.mu.Unlock()
}

// Issue 28: a socket whose agent heartbeats over it needs no pings: a ping
// goes out only when no call's reply did within the ping interval.
func TestPingsWaitForSilence(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, tc := range []struct {
		name      string
		lastReply time.Time
		want      bool
	}{
		{"no reply yet", time.Time{}, true},
		{"a reply just now", now.Add(-time.Second), false},
		{"a reply within the interval", now.Add(-19 * time.Second), false},
		{"the last reply an interval ago", now.Add(-20 * time.Second), true},
		{"a long silence", now.Add(-time.Hour), true},
	} {
		require.Equal(t, tc.want, agentgateway.PingDue(tc.lastReply, now, 20*time.Second), tc.name)
	}
}
