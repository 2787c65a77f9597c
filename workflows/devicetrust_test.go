package workflows_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/cairn-rmm/cairn"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/workflows"
)

// trustDeps fail each kind of call a few times before it works, and
// remember what finally got through.
type trustDeps struct {
	mu       sync.Mutex
	failures int
	calls    map[string]int
	drops    []string
	rows     []devices.NewActivity
	events   []events.Event
}

func (d *trustDeps) fail(kind string) error {
	d.calls[kind]++
	if d.calls[kind] <= d.failures {
		return errors.New(kind + ": temporarily unavailable")
	}
	return nil
}

func (d *trustDeps) Drop(_ context.Context, guid, reason string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.fail("drop"); err != nil {
		return err
	}
	d.drops = append(d.drops, guid+" "+reason)
	return nil
}

func (d *trustDeps) RecordActivity(_ context.Context, a devices.NewActivity) (devices.Activity, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.fail("record"); err != nil {
		return devices.Activity{}, err
	}
	d.rows = append(d.rows, a)
	return devices.Activity{}, nil
}

func (d *trustDeps) Publish(_ context.Context, e events.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.fail("publish"); err != nil {
		return err
	}
	d.events = append(d.events, e)
	return nil
}

func TestDeviceTrustActionRetriesEachStepUntilDone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		action, state, rowGUID, summary string
		drops                           []string
	}{
		{"quarantine", "quarantined", "g-1", "Quarantined by alice", []string{"g-1 device quarantined"}},
		{"unquarantine", "active", "g-1", "Released from quarantine by alice", nil},
		{"revoke", "revoked", "g-1", "Trust revoked by alice", []string{"g-1 device revoked"}},
		{"purge", "purged", "", "Purged by alice", []string{"g-1 device purged"}},
	} {
		t.Run(tc.action, func(t *testing.T) {
			t.Parallel()
			deps := &trustDeps{failures: 3, calls: map[string]int{}}
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			env.RegisterActivity(&activities.DeviceTrust{Sockets: deps, Activity: deps, Events: deps})
			// Issue 23: the device's tunnel goes with its trust, after
			// the socket (not on unquarantine).
			var torn []string
			tun := &activities.Tunnels{}
			env.RegisterActivity(tun)
			env.OnActivity(tun.TearDownTunnel, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.TrustActionInput) error {
				torn = append(torn, string(in.GUID))
				return nil
			})
			env.ExecuteWorkflow(workflows.DeviceTrustAction, workflows.TrustActionInput{GUID: "g-1", Hostname: "host-1", SiteID: 4,
				SiteSlug: "hq", Action: tc.action, TrustState: tc.state, TokenVersion: 3, Actor: "alice"})
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())

			require.Equal(t, tc.drops, deps.drops)
			if tc.drops == nil {
				require.Empty(t, torn)
			} else {
				require.Equal(t, []string{"g-1"}, torn)
			}
			require.Len(t, deps.rows, 1)
			row := deps.rows[0]
			require.Equal(t, devices.NewActivity{GUID: cairn.DeviceGUID(tc.rowGUID), Hostname: "host-1", SiteID: 4, Kind: "device_" + tc.action,
				Summary: tc.summary, Actor: "alice", Metadata: map[string]any{"trust_state": tc.state, "token_version": int32(3)}}, row)
			require.Len(t, deps.events, 1)
			require.Equal(t, events.TypeAgentStatusChanged, deps.events[0].Type)
			require.Equal(t, cairn.SiteID(int64(4)), deps.events[0].SiteID)
			require.JSONEq(t, `{"guid":"g-1","hostname":"host-1","site_id":4,"trust_state":"`+tc.state+`"}`, string(deps.events[0].Data))
		})
	}
}

// A process without a socket hub (a nil *Hub in the interface) skips the
// drop instead of failing the workflow.
func TestDeviceTrustActionWithoutSocketHub(t *testing.T) {
	t.Parallel()
	deps := &trustDeps{calls: map[string]int{}}
	type hub struct{ activities.SocketDropper }
	var none *hub
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.DeviceTrust{Sockets: none, Activity: deps, Events: deps})
	env.RegisterActivity(&activities.Tunnels{}) // no tunnels service: nothing to tear down
	env.ExecuteWorkflow(workflows.DeviceTrustAction, workflows.TrustActionInput{GUID: "g-2", Hostname: "h", Action: "revoke", TrustState: "revoked", Actor: "bob"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, deps.rows, 1)
	require.Len(t, deps.events, 1)
}

func TestDeviceTrustWorkflowID(t *testing.T) {
	t.Parallel()
	require.Equal(t, "trust:g-1:purge:7", workflows.DeviceTrustWorkflowID("g-1", "purge", 7))
	require.Equal(t, "trust_quarantine", workflows.JobKindTrust("quarantine"))
}
