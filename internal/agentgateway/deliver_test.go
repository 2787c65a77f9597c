package agentgateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
)

// two replicas over one database: A sends, the agent sits on A or on B.
func TestSendReachesTheAgentWhereverItsSocketIs(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a := f.replica(t, "replica-a", nil, agentgateway.Options{})
	b := f.replica(t, "replica-b", nil, agentgateway.Options{})
	for _, tc := range []struct {
		name   string
		holder *replica
	}{
		{"socket on this replica", a},
		{"socket on another replica", b},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dev := f.device(t, "alpha")
			ag := connect(t, tc.holder, dev)
			for i, typ := range []string{"service_control_action", "vnc_refresh", "patch_inventory_refresh_request"} {
				env := proto.Envelope{Type: typ, ID: typ, Payload: payload(t, map[string]int{"n": i})}
				require.NoError(t, a.hub.Send(context.Background(), dev.GUID, env))
			}
			for i, typ := range []string{"service_control_action", "vnc_refresh", "patch_inventory_refresh_request"} {
				got := ag.next()
				require.Equal(t, typ, got.Type, "messages keep their order")
				require.Equal(t, typ, got.ID)
				require.JSONEq(t, string(payload(t, map[string]int{"n": i})), string(got.Payload))
			}
		})
	}
}

func TestSendWithoutALiveSocket(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.replica(t, "replica-a", nil, agentgateway.Options{Completer: newCompletions()})
	offline := f.device(t, "alpha")
	for _, tc := range []struct {
		name, guid, code string
	}{
		{"device without a socket", string(offline.GUID), cairn.ECodeAgentSocketMissing},
		{"unknown device", "no-such-guid", cairn.ECodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := r.hub.Send(context.Background(), cairn.DeviceGUID(tc.guid), proto.Envelope{Type: "vnc_start"})
			require.Equal(t, tc.code, cairn.ErrorCode(err), "%v", err)
			err = r.hub.Dispatch(context.Background(), request(tc.guid, proto.EventProcessManagement, nil))
			require.Equal(t, tc.code, cairn.ErrorCode(err), "%v", err)
		})
	}
}

func TestSendAcrossReplicasRefusesWhatANotificationCannotCarry(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a := f.replica(t, "replica-a", nil, agentgateway.Options{})
	b := f.replica(t, "replica-b", nil, agentgateway.Options{})
	dev := f.device(t, "alpha")
	connect(t, b, dev)

	big := proto.Envelope{Type: "file_management_request", Payload: payload(t, strings.Repeat("x", 8000))}
	err := a.hub.Send(context.Background(), dev.GUID, big)
	require.Equal(t, cairn.ECodeTooLarge, cairn.ErrorCode(err), "%v", err)
	// The holder itself writes it: the limit is NOTIFY's, not the socket's.
	require.NoError(t, b.hub.Send(context.Background(), dev.GUID, big))
}

func TestDropClosesTheSocketWhereverItIs(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a := f.replica(t, "replica-a", nil, agentgateway.Options{})
	b := f.replica(t, "replica-b", nil, agentgateway.Options{})
	for _, tc := range []struct {
		name   string
		holder *replica
	}{
		{"socket on this replica", a},
		{"socket on another replica", b},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dev := f.device(t, "alpha")
			ag := connect(t, tc.holder, dev)
			require.NoError(t, a.hub.Drop(context.Background(), string(dev.GUID), "device quarantined"))
			if tc.holder == a {
				require.Empty(t, f.socket(t, string(dev.GUID), agentgateway.SocketFreshFor).SocketReplica,
					"a local drop clears the record before it returns")
			}
			ce := ag.closed(10 * time.Second)
			require.Equal(t, websocket.StatusPolicyViolation, ce.Code)
			require.Equal(t, "device quarantined", ce.Reason)
			eventually(t, func() bool { return f.socket(t, string(dev.GUID), agentgateway.SocketFreshFor).SocketReplica == "" },
				"a dropped socket's record is cleared")
		})
	}
	t.Run("no socket anywhere", func(t *testing.T) {
		t.Parallel()
		require.NoError(t, a.hub.Drop(context.Background(), string(f.device(t, "alpha").GUID), "device revoked"))
		require.NoError(t, a.hub.Drop(context.Background(), "purged-guid", "device purged"))
	})
}

func TestDropSiteClosesOnlyThatSitesSockets(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.replica(t, "replica-a", nil, agentgateway.Options{})
	gone, kept := f.device(t, "alpha"), f.device(t, "beta")
	agGone, agKept := connect(t, r, gone), connect(t, r, kept)

	r.hub.DropSite("alpha")
	ce := agGone.closed(10 * time.Second)
	require.Equal(t, websocket.StatusGoingAway, ce.Code)
	require.Equal(t, "site worker stopped; refresh the route", ce.Reason)
	require.NoError(t, r.hub.Send(context.Background(), kept.GUID, proto.Envelope{Type: "vnc_refresh"}))
	require.Equal(t, "vnc_refresh", agKept.next().Type)
}
