package agentgateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
)

// setTrust changes a device's trust the way a trust action does (state and
// token version), without the action's Drop: the Drop that got lost.
func (f *fixture) setTrust(t *testing.T, guid, state string) {
	t.Helper()
	_, err := f.store.Pool.Exec(context.Background(),
		`UPDATE devices SET trust_state = $2, token_version = token_version + 1 WHERE guid = $1`, guid, state)
	require.NoError(t, err)
}

// dropListeners ends every replica's LISTEN connection to the test
// database, as a PostgreSQL restart or a network cut would; the buses
// reconnect on their own.
func (f *fixture) dropListeners(t *testing.T) {
	t.Helper()
	tag, err := f.store.Pool.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '%LISTEN cairn_agents%'`)
	require.NoError(t, err)
	require.Positive(t, tag.RowsAffected(), "no listener to drop")
}

// Each refresh re-checks the sockets a replica holds against their
// devices: a socket whose Drop never arrived closes all the same.
func TestRefreshClosesSocketsOfDevicesNoLongerTrusted(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.replica(t, "replica-a", nil, agentgateway.Options{SeenRefresh: 50 * time.Millisecond})
	f.device(t, "alpha") // the site exists before the parallel subtests
	for _, tc := range []struct {
		name, reason string
		change       func(t *testing.T, guid string)
	}{
		{"quarantined", "device quarantined", func(t *testing.T, guid string) { f.setTrust(t, guid, "quarantined") }},
		{"revoked", "device revoked", func(t *testing.T, guid string) { f.setTrust(t, guid, "revoked") }},
		{"token version changed", "the device's token version changed; refresh the token and reconnect", func(t *testing.T, guid string) {
			f.setTrust(t, guid, "active")
		}},
		{"purged", "device not found", func(t *testing.T, guid string) {
			_, err := f.store.Pool.Exec(context.Background(), `DELETE FROM devices WHERE guid = $1`, guid)
			require.NoError(t, err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dev := f.device(t, "alpha")
			ag := connect(t, r, dev)
			tc.change(t, dev.GUID)
			ce := ag.closed(30 * time.Second)
			require.Equal(t, websocket.StatusPolicyViolation, ce.Code)
			require.Equal(t, tc.reason, ce.Reason)
		})
	}
	t.Run("a trusted device keeps its socket", func(t *testing.T) {
		t.Parallel()
		dev := f.device(t, "alpha")
		ag := connect(t, r, dev)
		// A sweep (besides those the refreshes run) leaves it open.
		agentgateway.Sweep(context.Background(), r.hub)
		require.NoError(t, r.hub.Send(context.Background(), dev.GUID, proto.Envelope{Type: "vnc_refresh"}))
		require.Equal(t, "vnc_refresh", ag.next().Type)
	})
}

// A socket upgraded with a token its device no longer honours (a trust
// action came between the upgrade and connect_agent) is refused, so the
// action's Drop, which ran before the socket was recorded, misses nothing.
func TestSocketOfAnUntrustedDeviceIsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.replica(t, "replica-a", nil, agentgateway.Options{})
	for _, tc := range []struct{ name, state, reason string }{
		{"quarantined", "quarantined", "device quarantined"},
		{"token version changed", "active", "the device's token version changed; refresh the token and reconnect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := f.device(t, "alpha")
			f.setTrust(t, dev.GUID, tc.state)
			ag := dial(t, r, dev)
			ag.send(proto.MsgConnectAgent, "", proto.ConnectAgent{GUID: dev.GUID, AgentVersion: "1.0.0", Protocol: proto.Version})
			ack := ag.ack()
			require.False(t, ack.Accepted)
			require.Equal(t, tc.reason, ack.Reason)
			require.Empty(t, f.socket(t, dev.GUID, agentgateway.SocketFreshFor).SocketReplica, "nothing is recorded")
		})
	}
}

// What another replica handed over while this one's listener was
// reconnecting is not lost: once it listens again, the replica re-reads
// PostgreSQL. The refresh is an hour away here, so only the reconnect
// can deliver.
func TestHandoversSurviveAListenerReconnect(t *testing.T) {
	t.Parallel()
	f := setup(t)
	done := newCompletions()
	holder := f.replica(t, "replica-b", nil, agentgateway.Options{Completer: done, SeenRefresh: time.Hour})
	dropped, dispatched := f.device(t, "alpha"), f.device(t, "alpha")
	agDropped, agDispatched := connect(t, holder, dropped), connect(t, holder, dispatched)

	// Another replica quarantined one device and stored a request for the
	// other; both notifications went out while the holder was not listening.
	f.setTrust(t, dropped.GUID, "quarantined")
	req := request(dispatched.GUID, proto.EventProcessManagement, payload(t, map[string]string{"action": "list"}))
	require.NoError(t, f.store.AgentRequestInsert(context.Background(), db.AgentRequestInsertParams{ID: req.ID,
		DeviceGuid: req.GUID, OperationID: req.OperationID, Type: req.Type, Payload: req.Payload, TaskToken: req.TaskToken,
		ExpiresAt: req.ExpiresAt}))
	f.dropListeners(t)

	ce := agDropped.closed(30 * time.Second)
	require.Equal(t, websocket.StatusPolicyViolation, ce.Code)
	require.Equal(t, "device quarantined", ce.Reason)

	got := agDispatched.next()
	require.Equal(t, req.ID, got.ID)
	require.Equal(t, req.OperationID, got.OperationID)
	agDispatched.send(proto.MsgReply, got.ID, map[string]any{"processes": []any{}})
	c := done.wait(t, string(req.TaskToken))
	require.Empty(t, c.code)
}
