package agentgateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

func TestAcceptedSocketIsRecordedAndAnnounced(t *testing.T) {
	t.Parallel()
	f := setup(t)
	dev := f.device(t, "alpha")
	r := f.replica(t, "replica-a", nil, agentgateway.Options{})

	a := dial(t, r, dev)
	a.send(proto.MsgConnectAgent, "", proto.ConnectAgent{GUID: string(dev.GUID), Protocol: proto.Version, HelperContexts: []string{"currentuser"}})
	ack := a.ack()
	require.Equal(t, proto.ConnectAgentAck{Accepted: true, Worker: "site:alpha", PingIntervalSeconds: 20}, ack)

	rec := f.socket(t, string(dev.GUID), agentgateway.SocketFreshFor)
	require.True(t, rec.SocketLive)
	require.Equal(t, "replica-a", rec.SocketReplica)
	require.Equal(t, []string{"currentuser"}, rec.HelperContexts)
	require.Equal(t, map[string]any{"guid": string(dev.GUID), "hostname": dev.Hostname, "site_id": float64(dev.SiteID), "agent_socket": true}, r.status(t))

	// The agent goes away: the record is cleared and consoles hear of it.
	require.NoError(t, a.ws.Close(websocket.StatusNormalClosure, "bye"))
	require.Equal(t, map[string]any{"guid": string(dev.GUID), "hostname": dev.Hostname, "site_id": float64(dev.SiteID), "agent_socket": false}, r.status(t))
	rec = f.socket(t, string(dev.GUID), agentgateway.SocketFreshFor)
	require.False(t, rec.SocketLive)
	require.Empty(t, rec.SocketReplica)
}

func TestBadConnectAgentIsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.replica(t, "replica-a", nil, agentgateway.Options{})
	for _, tc := range []struct {
		name   string
		typ    string
		hello  func(dev devicetrust.Identity) any
		reason string
	}{
		{"another device's guid", proto.MsgConnectAgent,
			func(devicetrust.Identity) any {
				return proto.ConnectAgent{GUID: "someone-else", Protocol: proto.Version}
			},
			"connect_agent guid is not the authenticated device"},
		{"newer protocol", proto.MsgConnectAgent,
			func(d devicetrust.Identity) any {
				return proto.ConnectAgent{GUID: string(d.GUID), Protocol: proto.Version + 1}
			},
			fmt.Sprintf("protocol %d is not supported; this worker speaks %d to %d", proto.Version+1, proto.MinVersion, proto.Version)},
		{"older than served", proto.MsgConnectAgent,
			func(d devicetrust.Identity) any {
				return proto.ConnectAgent{GUID: string(d.GUID), Protocol: proto.MinVersion - 1}
			},
			fmt.Sprintf("protocol %d is not supported; this worker speaks %d to %d", proto.MinVersion-1, proto.MinVersion, proto.Version)},
		{"another message first", proto.MsgPong,
			func(d devicetrust.Identity) any {
				return proto.ConnectAgent{GUID: string(d.GUID), Protocol: proto.Version}
			},
			"the first message must be connect_agent"},
		{"malformed payload", proto.MsgConnectAgent,
			func(devicetrust.Identity) any { return []string{"not", "an", "object"} },
			"connect_agent payload is malformed"},
		{"too many capabilities", proto.MsgConnectAgent,
			func(d devicetrust.Identity) any {
				return proto.ConnectAgent{GUID: string(d.GUID), Protocol: proto.Version, Capabilities: make([]proto.Capability, proto.MaxCapabilities+1)}
			},
			fmt.Sprintf("connect_agent lists more than %d capabilities", proto.MaxCapabilities)},
		{"a capability that is no name", proto.MsgConnectAgent,
			func(d devicetrust.Identity) any {
				return proto.ConnectAgent{GUID: string(d.GUID), Protocol: proto.Version, Capabilities: []proto.Capability{"files", "Bad Name"}}
			},
			`connect_agent capability "Bad Name" is not a capability name (a-z, 0-9, _; at most 64)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dev := f.device(t, "alpha")
			a := dial(t, r, dev)
			a.send(tc.typ, "", tc.hello(dev))
			ack := a.ack()
			require.False(t, ack.Accepted)
			require.Equal(t, tc.reason, ack.Reason)
			ce := a.closed(10 * time.Second)
			require.Equal(t, websocket.StatusPolicyViolation, ce.Code)
			require.Empty(t, f.socket(t, string(dev.GUID), agentgateway.SocketFreshFor).SocketReplica)
		})
	}
}

func TestSocketWithoutConnectAgentIsClosed(t *testing.T) {
	t.Parallel()
	f := setup(t)
	dev := f.device(t, "alpha")
	r := f.replica(t, "replica-a", nil, agentgateway.Options{ConnectTimeout: 300 * time.Millisecond})

	// Taken before dialling, so the server's timer cannot start earlier.
	start := time.Now()
	a := dial(t, r, dev)
	a.closed(10 * time.Second)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	require.Empty(t, f.socket(t, string(dev.GUID), agentgateway.SocketFreshFor).SocketReplica)
}

func TestSocketForASiteThisProcessDoesNotRunIsMisdirected(t *testing.T) {
	t.Parallel()
	f := setup(t)
	dev := f.device(t, "alpha")
	r := f.replica(t, "replica-a", sites{"beta": true}, agentgateway.Options{})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, res, err := websocket.Dial(ctx, r.url+"?guid="+string(dev.GUID), nil)
	require.Error(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusMisdirectedRequest, res.StatusCode)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var e proto.Error
	require.NoError(t, json.Unmarshal(body, &e))
	require.Equal(t, proto.CodeWrongWorker, e.Code)
	require.NotEmpty(t, e.Message)
}

func TestPingsKeepSocketsAliveAndSilentAgentsAreDropped(t *testing.T) {
	t.Parallel()
	f := setup(t)
	talker, silent := f.device(t, "alpha"), f.device(t, "alpha")
	const ping, idle = 200 * time.Millisecond, time.Second
	r := f.replica(t, "replica-a", nil, agentgateway.Options{PingInterval: ping, IdleTimeout: idle})

	// The talker answers every ping for three idle periods and at least
	// five pings (counted, so a stalled machine only makes this longer).
	a := connect(t, r, talker)
	var first time.Time
	pings := 0
	for pings < 5 || time.Since(first) < 3*idle {
		env, err := a.read(5 * time.Second)
		require.NoError(t, err, "a responsive agent keeps its socket")
		require.Equal(t, proto.MsgPing, env.Type)
		if pings == 0 {
			first = time.Now()
		}
		pings++
		a.send(proto.MsgPong, env.ID, nil)
	}
	elapsed := time.Since(first)
	require.GreaterOrEqual(t, elapsed, time.Duration(pings-2)*ping, "pings come every interval, not faster")
	require.True(t, f.socket(t, string(talker.GUID), agentgateway.SocketFreshFor).SocketLive)

	// The silent agent sends nothing after connect_agent and is dropped.
	// Taken before connecting, so the idle timer cannot start earlier.
	start := time.Now()
	s := connect(t, r, silent)
	s.closed(10 * time.Second)
	require.GreaterOrEqual(t, time.Since(start), idle)
	eventually(t, func() bool { return f.socket(t, string(silent.GUID), agentgateway.SocketFreshFor).SocketReplica == "" },
		"a dropped socket's record is cleared")
}

func TestOversizedMessageEndsTheSocket(t *testing.T) {
	t.Parallel()
	f := setup(t)
	dev := f.device(t, "alpha")
	r := f.replica(t, "replica-a", nil, agentgateway.Options{MaxMessageBytes: 1024})
	a := connect(t, r, dev)

	a.send(proto.MsgReply, "big", strings.Repeat("x", 2048))
	require.Equal(t, websocket.StatusMessageTooBig, a.closed(10*time.Second).Code)
	eventually(t, func() bool { return f.socket(t, string(dev.GUID), agentgateway.SocketFreshFor).SocketReplica == "" },
		"the record of a socket ended for a too large message is cleared")
}

func TestSecondSocketOfADeviceReplacesTheFirst(t *testing.T) {
	t.Parallel()
	f := setup(t)
	dev := f.device(t, "alpha")
	r := f.replica(t, "replica-a", nil, agentgateway.Options{})

	first := connect(t, r, dev)
	second := connect(t, r, dev)
	ce := first.closed(10 * time.Second)
	require.Equal(t, websocket.StatusNormalClosure, ce.Code)
	require.Equal(t, "replaced by a newer socket of this device", ce.Reason)

	// The replaced socket's cleanup leaves its successor's record alone.
	eventually(t, func() bool { return r.ended.Load() == 1 }, "the replaced socket's handler returned")
	rec := f.socket(t, string(dev.GUID), agentgateway.SocketFreshFor)
	require.True(t, rec.SocketLive)
	require.Equal(t, "replica-a", rec.SocketReplica)
	require.NoError(t, r.hub.Send(context.Background(), dev.GUID, proto.Envelope{Type: "vnc_refresh"}))
	require.Equal(t, "vnc_refresh", second.next().Type)
}

func TestCloseLeavesANewerSocketOnAnotherReplica(t *testing.T) {
	t.Parallel()
	f := setup(t)
	dev := f.device(t, "alpha")
	a := f.replica(t, "replica-a", nil, agentgateway.Options{})
	b := f.replica(t, "replica-b", nil, agentgateway.Options{})

	old := connect(t, a, dev)
	a.status(t)
	connect(t, b, dev)
	require.Equal(t, "replica-b", f.socket(t, string(dev.GUID), agentgateway.SocketFreshFor).SocketReplica)

	// The old socket on replica A ends after the agent moved to B.
	require.NoError(t, old.ws.Close(websocket.StatusNormalClosure, "moved"))
	eventually(t, func() bool { return a.ended.Load() == 1 }, "replica A's handler of the old socket returned")
	rec := f.socket(t, string(dev.GUID), agentgateway.SocketFreshFor)
	require.True(t, rec.SocketLive)
	require.Equal(t, "replica-b", rec.SocketReplica)
	// Events cross replicas: A hears B's connect, but nobody says false.
	for {
		select {
		case e := <-a.statuses:
			require.NotContains(t, string(e.Data), `"agent_socket":false`, "a disconnect replica A did not own")
			continue
		default:
		}
		break
	}
}

func TestSeenAtOfAllSocketsIsRefreshedTogether(t *testing.T) {
	t.Parallel()
	f := setup(t)
	devs := []devicetrust.Identity{f.device(t, "alpha"), f.device(t, "alpha"), f.device(t, "beta")}
	// Replica A refreshes only when told; B on its own, often.
	a := f.replica(t, "replica-a", nil, agentgateway.Options{SeenRefresh: time.Hour})
	b := f.replica(t, "replica-b", nil, agentgateway.Options{SeenRefresh: 100 * time.Millisecond})
	for _, d := range devs {
		connect(t, a, d)
	}
	onB := f.device(t, "alpha")
	connect(t, b, onB)

	// Wait for staleness, not a fixed time; fresh leaves the reads after
	// RefreshSeen a wide margin on a loaded machine.
	const fresh = 2 * time.Second
	for _, d := range devs {
		eventually(t, func() bool { return !f.socket(t, string(d.GUID), fresh).SocketLive }, "not refreshed: stale, as if replica A had died")
	}
	eventually(t, func() bool { return f.socket(t, string(onB.GUID), fresh).SocketLive }, "replica B's loop refreshes")

	n, err := agentgateway.RefreshSeen(context.Background(), a.hub)
	require.NoError(t, err)
	require.EqualValues(t, len(devs), n, "one statement confirms every socket of the replica")
	for _, d := range devs {
		require.True(t, f.socket(t, string(d.GUID), fresh).SocketLive)
	}
}

func TestStoppedHubClosesItsSocketsAndRefusesNewOnes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	dev := f.device(t, "alpha")
	r := f.replica(t, "replica-a", nil, agentgateway.Options{})
	a := connect(t, r, dev)

	r.stop()
	require.Equal(t, websocket.StatusGoingAway, a.closed(10*time.Second).Code)
	eventually(t, func() bool { return f.socket(t, string(dev.GUID), agentgateway.SocketFreshFor).SocketReplica == "" },
		"shutdown clears the record")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, res, err := websocket.Dial(ctx, r.url+"?guid="+string(dev.GUID), nil)
	require.Error(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
}

func TestRoutePointsAtTheSocketUnderThePublicURL(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.replica(t, "replica-a", nil, agentgateway.Options{})
	dev := devicetrust.Identity{GUID: "g", SiteSlug: "alpha"}
	for _, tc := range []struct{ public, want string }{
		{"https://rmm.example.com", "wss://rmm.example.com/api/agent/realtime/socket"},
		{"http://127.0.0.1:8080/", "ws://127.0.0.1:8080/api/agent/realtime/socket"},
		{"https://example.com:8443/cairn/", "wss://example.com:8443/cairn/api/agent/realtime/socket"},
	} {
		u, err := url.Parse(tc.public)
		require.NoError(t, err)
		route, err := r.hub.Route(context.Background(), dev, u)
		require.NoError(t, err)
		require.Equal(t, proto.Route{URL: tc.want, SiteSlug: "alpha", Worker: "site:alpha"}, route, tc.public)
	}
}

// runner is a SiteRunner that lists its sites, as *workers.Manager does,
// so its hub records them with its endpoint.
type runner []string

func (r runner) Runs(slug string) bool  { return slices.Contains(r, slug) }
func (r runner) RunningSites() []string { return r }

// A process that does not run a site names a live standalone worker that
// does, the least loaded first; one that stopped is named no more.
func TestRouteNamesAStandaloneWorkerOfTheSite(t *testing.T) {
	t.Parallel()
	f := setup(t)
	serve := f.replica(t, "serve", runner{}, agentgateway.Options{})
	w1 := f.replica(t, "worker-1", runner{"beta"}, agentgateway.Options{Endpoint: "https://w1.example.test:8090"})
	w2 := f.replica(t, "worker-2", runner{"beta", "gamma"}, agentgateway.Options{Endpoint: "http://127.0.0.1:8091"})
	public, err := url.Parse("https://rmm.example.test")
	require.NoError(t, err)
	route := func(slug string) string {
		r, err := serve.hub.Route(context.Background(), devicetrust.Identity{GUID: "g", SiteSlug: slug}, public)
		require.NoError(t, err)
		return r.URL
	}
	eventually(t, func() bool { return route("gamma") == "ws://127.0.0.1:8091/api/agent/realtime/socket" }, "worker-2 runs gamma")
	require.Equal(t, "wss://rmm.example.test/api/agent/realtime/socket", route("alpha"), "nobody runs alpha: the public URL")

	// worker-2 holds a socket of beta, so worker-1 is the less loaded.
	connect(t, w2, f.device(t, "beta"))
	eventually(t, func() bool { return route("beta") == "wss://w1.example.test:8090/api/agent/realtime/socket" }, "least loaded first")

	w1.stop()
	eventually(t, func() bool { return route("beta") == "ws://127.0.0.1:8091/api/agent/realtime/socket" }, "a stopped worker is forgotten")
	_ = w2
}

// The capabilities column is what the last connect_agent reported, each
// name once; NULL (the legacy set) for an agent before protocol 4,
// whatever it sent.
func TestConnectStoresCapabilities(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.replica(t, "replica-a", nil, agentgateway.Options{})
	for _, tc := range []struct {
		name  string
		hello proto.ConnectAgent
		want  []string
	}{
		{"reported", proto.ConnectAgent{Protocol: proto.Version, Capabilities: []proto.Capability{"files", "shell", "files", "from_the_future"}},
			[]string{"files", "shell", "from_the_future"}},
		{"none", proto.ConnectAgent{Protocol: proto.Version}, []string{}},
		{"older agent", proto.ConnectAgent{Protocol: 3, Capabilities: []proto.Capability{"registry"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dev := f.device(t, "alpha")
			a := dial(t, r, dev)
			hello := tc.hello
			hello.GUID = string(dev.GUID)
			a.send(proto.MsgConnectAgent, "", hello)
			require.True(t, a.ack().Accepted)
			row, err := f.store.DeviceGetByGUID(context.Background(), dev.GUID)
			require.NoError(t, err)
			require.Equal(t, tc.want, row.Capabilities)
		})
	}
}
