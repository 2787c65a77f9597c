package agentgateway_test

import (
	"context"
	"github.com/cairn-rmm/cairn"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
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
			tc.change(t, string(dev.GUID))
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
			f.setTrust(t, string(dev.GUID), tc.state)
			ag := dial(t, r, dev)
			ag.send(proto.MsgConnectAgent, "", proto.ConnectAgent{GUID: string(dev.GUID), AgentVersion: "1.0.0", Protocol: proto.Version})
			ack := ag.ack()
			require.False(t, ack.Accepted)
			require.Equal(t, tc.reason, ack.Reason)
			require.Empty(t, f.socket(t, string(dev.GUID), agentgateway.SocketFreshFor).SocketReplica, "nothing is recorded")
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
	f.setTrust(t, string(dropped.GUID), "quarantined")
	req := request(string(dispatched.GUID), proto.EventProcessManagement, payload(t, map[string]string{"action": "list"}))
	require.NoError(t, f.store.AgentRequestInsert(context.Background(), db.AgentRequestInsertParams{ID: req.ID,
		DeviceGuid: req.GUID, OperationID: req.OperationID, Type: req.Type, Payload: req.Payload, TaskToken: req.TaskToken,
		ExpiresAt: req.ExpiresAt}))
	f.dropListeners(t)

	ce := agDropped.closed(30 * time.Second)
	require.Equal(t, websocket.StatusPolicyViolation, ce.Code)
	require.Equal(t, "device quarantined", ce.Reason)

	got := agDispatched.next()
	require.Equal(t, req.ID, got.ID)
	require.Equal(t, string(req.OperationID), got.OperationID)
	agDispatched.send(proto.MsgReply, got.ID, map[string]any{"processes": []any{}})
	c := done.wait(t, string(req.TaskToken))
	require.Empty(t, c.code)
}

// refreshed records a token pair minted for guid at (a refresh), as
// devicetrust.Tokens.Refresh stores it; revoked marks its family revoked.
func (f *fixture) refreshed(t *testing.T, guid string, at time.Time, revoked bool) {
	t.Helper()
	ctx := context.Background()
	hash := []byte(uuid.NewString())
	require.NoError(t, f.store.RefreshTokenInsert(ctx, db.RefreshTokenInsertParams{TokenHash: hash, DeviceGuid: cairn.DeviceGUID(guid),
		FamilyID: "family-" + guid, ExpiresAt: at.Add(devicetrust.RefreshTokenTTL)}))
	if revoked {
		require.NoError(t, f.store.RefreshTokenRevokeFamily(ctx, db.RefreshTokenRevokeFamilyParams{FamilyID: "family-" + guid, Now: &at}))
	}
}

// A socket outlives the access token it was opened with only while the
// device refreshes: a sweep past the token's expiry looks for a newer
// token (a newer live refresh token is minted with it) and closes the
// socket when there is none.
func TestSocketEndsWhenItsAccessTokenLapses(t *testing.T) {
	t.Parallel()
	f := setup(t)
	clk := authtest.NewClock()
	// Sweeps run when the test says so (and once as the listener starts).
	r := f.replica(t, "replica-a", nil, agentgateway.Options{SeenRefresh: time.Hour, Now: clk.Now})
	opened := clk.Now()
	connectWithToken := func(t *testing.T) (devicetrust.Identity, *agent) {
		dev := f.device(t, "alpha")
		dev.ExpiresAt = opened.Add(devicetrust.AccessTokenTTL)
		f.mu.Lock()
		f.devices[string(dev.GUID)] = dev
		f.mu.Unlock()
		return dev, connect(t, r, dev)
	}
	refreshing, a := connectWithToken(t)
	stopped, b := connectWithToken(t)
	stolen, c := connectWithToken(t)
	ctx := context.Background()
	alive := func(dev devicetrust.Identity, ag *agent) {
		t.Helper()
		require.NoError(t, r.hub.Send(ctx, dev.GUID, proto.Envelope{Type: "vnc_refresh"}))
		require.Equal(t, "vnc_refresh", ag.next().Type)
	}
	lapsed := func(ag *agent) {
		t.Helper()
		ce := ag.closed(30 * time.Second)
		require.Equal(t, websocket.StatusPolicyViolation, ce.Code)
		require.Equal(t, "the access token expired and was not refreshed; refresh it and reconnect", ce.Reason)
	}

	// Ten minutes in, one device refreshes; another's refresh family is
	// revoked (a reused token), which leaves it no newer token.
	clk.Advance(10 * time.Minute)
	f.refreshed(t, string(refreshing.GUID), clk.Now(), false)
	f.refreshed(t, string(stolen.GUID), clk.Now(), true)
	agentgateway.Sweep(ctx, r.hub)
	alive(stopped, b) // its token is still valid

	// Past the first tokens' expiry: only the refreshed device keeps its socket.
	clk.Advance(6 * time.Minute)
	agentgateway.Sweep(ctx, r.hub)
	lapsed(b)
	lapsed(c)
	alive(refreshing, a)

	// Past the refreshed token's expiry, with no refresh since.
	clk.Advance(10 * time.Minute)
	agentgateway.Sweep(ctx, r.hub)
	lapsed(a)
}
