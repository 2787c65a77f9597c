package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairn-rmm/cairn"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/workflows"
)

// connect opens the agent's realtime socket and registers it, retrying
// while the site's worker is still starting (421 wrong_worker).
func (a *testAgent) connect(t *testing.T) *websocket.Conn {
	t.Helper()
	c, ack := a.connectAck(t)
	require.True(t, ack.Accepted, ack.Reason)
	return c
}

// connectAck is connect returning the ack, accepted or not.
func (a *testAgent) connectAck(t *testing.T) (*websocket.Conn, proto.ConnectAgentAck) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wsURL := "ws" + strings.TrimPrefix(a.f.url, "http") + proto.PathRealtimeWS
	for {
		proof, err := agent.NewProof(a.key, "GET", testPublicURL+proto.PathRealtimeWS, a.access, a.f.clk.Now())
		require.NoError(t, err)
		h := http.Header{}
		h.Set(proto.HeaderAgentContext, proto.AgentContextValue(proto.ContextPrivileged))
		h.Set(proto.HeaderDPoP, proof)
		h.Set("Authorization", proto.AuthScheme+" "+a.access)
		c, res, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: h})
		if err == nil {
			hello, _ := json.Marshal(a.hello())
			require.NoError(t, writeEnvelope(ctx, c, proto.Envelope{Type: proto.MsgConnectAgent, Payload: hello}))
			env := readEnvelope(ctx, t, c)
			require.Equal(t, proto.MsgConnectAgentAck, env.Type)
			var ack proto.ConnectAgentAck
			require.NoError(t, json.Unmarshal(env.Payload, &ack))
			return c, ack
		}
		require.NotNil(t, res, "dial failed without an answer: %v", err)
		require.Equal(t, http.StatusMisdirectedRequest, res.StatusCode, "only a starting worker may refuse: %v", err)
		select {
		case <-ctx.Done():
			t.Fatal("the site worker never took the socket")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// hello is the agent's connect_agent: every capability unless the test
// chose a set or an older protocol (which reports none).
func (a *testAgent) hello() proto.ConnectAgent {
	h := proto.ConnectAgent{GUID: a.guid, AgentVersion: "test", Protocol: proto.Version, Capabilities: proto.AllCapabilities,
		BootID: a.bootID, Fingerprint: a.fingerprint, HelperContexts: a.helpers}
	if a.caps != nil {
		h.Capabilities = a.caps
	}
	if a.protocol != 0 {
		h.Protocol = a.protocol
	}
	if h.Protocol < proto.CapabilitiesVersion {
		h.Capabilities = nil
	}
	return h
}

func writeEnvelope(ctx context.Context, c *websocket.Conn, env proto.Envelope) error {
	b, err := json.Marshal(env)
	if err != nil {
		return err
	}
	return c.Write(ctx, websocket.MessageText, b)
}

func readEnvelope(ctx context.Context, t *testing.T, c *websocket.Conn) proto.Envelope {
	t.Helper()
	_, b, err := c.Read(ctx)
	require.NoError(t, err)
	var env proto.Envelope
	require.NoError(t, json.Unmarshal(b, &env))
	return env
}

func TestRealtimeRouteSocketAndTrustActions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "socket")
	a := f.enrolled(t, admin, site, "sock-01")
	ctx := context.Background()

	route := a.device(t, "GET", proto.PathRealtimeRoute, nil)
	require.Equal(t, 200, route.Status, route.Raw)
	require.Equal(t, "wss://cairn.example.test"+proto.PathRealtimeWS, route.Body["url"])
	require.True(t, strings.HasPrefix(route.Body["worker"].(string), "site:socket-"))

	c := a.connect(t)
	dev, err := f.store.DeviceGetByGUID(ctx, cairn.DeviceGUID(a.guid))
	require.NoError(t, err)
	require.NotNil(t, dev.SocketReplica, "the socket is recorded")

	// An operator is not an admin; the action is refused and nothing ends.
	op := f.operator(t, "sock-operator")
	require.Equal(t, 403, f.do(t, "POST", "/api/devices/"+a.guid+"/quarantine", op, nil).Status)

	stream := openStream(t, f.url, admin)
	q := f.do(t, "POST", "/api/devices/"+a.guid+"/quarantine", admin, nil)
	require.Equal(t, 200, q.Status, q.Raw)
	require.Equal(t, "quarantined", q.Body["trust_state"])
	// The drop is the DeviceTrustAction workflow's, after the answer; the
	// bound only keeps a broken worker from hanging the test.
	readCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		_, _, err := c.Read(readCtx)
		if err != nil {
			require.Equal(t, websocket.StatusPolicyViolation, websocket.CloseStatus(err), "quarantine drops the socket: %v", err)
			break
		}
	}
	trustEvent(t, stream, a.guid, "quarantined")
	r := a.device(t, "GET", proto.PathRealtimeRoute, nil)
	require.Equal(t, 401, r.Status, r.Raw)
	require.Equal(t, "token_version_mismatch", r.Body["error"])
	require.Equal(t, "device_quarantined", a.doRefresh(t).Body["error"])

	u := f.do(t, "POST", "/api/devices/"+a.guid+"/unquarantine", admin, nil)
	require.Equal(t, 200, u.Status, u.Raw)
	require.Equal(t, "active", u.Body["trust_state"])
	trustEvent(t, stream, a.guid, "active")
	require.Equal(t, 200, a.doRefresh(t).Status, "unquarantine: a fresh token works")
	require.Equal(t, 200, a.device(t, "GET", proto.PathRealtimeRoute, nil).Status)
	c2 := a.connect(t)
	defer c2.CloseNow()

	require.Equal(t, 409, f.do(t, "POST", "/api/devices/"+a.guid+"/unquarantine", admin, nil).Status)
	rv := f.do(t, "POST", "/api/devices/"+a.guid+"/revoke", admin, nil)
	require.Equal(t, 200, rv.Status, rv.Raw)
	require.Equal(t, "token_revoked", a.doRefresh(t).Body["error"], "revoke revokes the refresh tokens")

	p := f.do(t, "POST", "/api/devices/"+a.guid+"/purge", admin, nil)
	require.Equal(t, 200, p.Status, p.Raw)
	require.Equal(t, "purged", p.Body["trust_state"])
	require.Equal(t, "device_purged", a.doRefresh(t).Body["error"])
	require.Equal(t, 404, f.do(t, "POST", "/api/devices/"+a.guid+"/purge", admin, nil).Status)
	trustEvent(t, stream, a.guid, "purged")

	// Each action's follow-up is a workflow an SRE finds by device, site
	// and kind; the history names the operator for every action, the
	// purge by hostname only.
	wf := workflows.DeviceTrustWorkflowID(a.guid, "purge", int32(p.Body["token_version"].(float64)))
	require.NoError(t, f.engine.core.Temporal.GetWorkflow(ctx, wf, "").Get(ctx, nil))
	desc, err := temporalClient.DescribeWorkflowExecution(ctx, wf, "")
	require.NoError(t, err)
	attrs := map[string]string{}
	for _, name := range workflows.SearchAttributes {
		payload := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[name]
		require.NotNil(t, payload, name)
		var v any // a Keyword, or a list of one on some servers
		require.NoError(t, converter.GetDefaultDataConverter().FromPayload(payload, &v))
		if list, ok := v.([]any); ok && len(list) == 1 {
			v = list[0]
		}
		attrs[name], _ = v.(string)
	}
	require.Equal(t, map[string]string{"DeviceGUID": a.guid, "SiteSlug": route.Body["worker"].(string)[len("site:"):], "JobKind": "trust_purge"}, attrs)
	var act response
	require.Eventually(t, func() bool {
		act = f.do(t, "GET", "/api/device/activity/sock-01", admin, nil)
		return act.Status == 200 && strings.Contains(act.Raw, "Purged by admin")
	}, 60*time.Second, 50*time.Millisecond, "the purge is recorded: %s", act.Raw)
	for _, summary := range []string{"Quarantined by admin", "Released from quarantine by admin", "Trust revoked by admin"} {
		require.Contains(t, act.Raw, summary)
	}
}

// trustEvent waits for the agent_status_changed event of a trust action
// on guid, skipping the device's other status events.
func trustEvent(t *testing.T, stream <-chan sseEvent, guid, state string) {
	t.Helper()
	for {
		e := next(t, stream, events.TypeAgentStatusChanged)
		if e.Data["guid"] == guid && e.Data["trust_state"] == state {
			return
		}
	}
}
