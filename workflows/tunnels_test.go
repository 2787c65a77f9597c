package workflows_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/workflows"
)

// TunnelEstablish's branches: a final refusal is not retried, a failure
// another attempt may fix is retried up to three times, a tunnel never
// reported ready fails with tunnel_not_ready, and a retried start that
// then reports ready ends ready with the tunnel's address.
func TestTunnelEstablishBranches(t *testing.T) {
	t.Parallel()
	fail := func(code string) error {
		return temporal.NewNonRetryableApplicationError("agent said "+code, code, nil)
	}
	ready := activities.TunnelState{TunnelID: "t-1", VirtualIP: "10.213.0.2", Endpoint: "192.0.2.1:51820"}
	for _, c := range []struct {
		name     string
		attempts []error // the agent's answer per attempt (nil: started)
		ready    bool
		phase    string
		code     string
		asked    int
	}{
		{"quarantined device: no retry", []error{fail("device_quarantined")}, false, workflows.TunnelPhaseFailed, "device_quarantined", 1},
		{"no handshake three times", []error{fail("tunnel_no_handshake"), fail("tunnel_no_handshake"), fail("tunnel_no_handshake")}, false,
			workflows.TunnelPhaseFailed, "tunnel_no_handshake", 3},
		{"never reported ready", []error{nil}, false, workflows.TunnelPhaseFailed, "tunnel_not_ready", 1},
		{"second attempt comes up", []error{fail("tunnel_tools_missing"), nil}, true, workflows.TunnelPhaseReady, "", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			env.RegisterWorkflow(workflows.DeviceOperation)
			asked := 0
			var opIDs []string
			env.OnWorkflow(workflows.DeviceOperation, mock.Anything, mock.Anything).Return(
				func(_ workflow.Context, in workflows.OperationInput) (workflows.OperationResult, error) {
					opIDs = append(opIDs, string(in.OperationID))
					asked++
					return workflows.OperationResult{}, c.attempts[asked-1]
				})
			tun := &activities.Tunnels{}
			env.RegisterActivity(tun)
			env.OnActivity(tun.CheckTunnelReady, mock.Anything, mock.Anything).Return(func(context.Context, string) (activities.TunnelState, error) {
				if c.ready {
					return ready, nil
				}
				return activities.TunnelState{}, temporal.NewApplicationError("not yet", "tunnel_not_ready")
			})
			env.ExecuteWorkflow(workflows.TunnelEstablish, workflows.TunnelInput{OperationID: "op-1", Actor: "admin",
				Target: devices.OperationTarget{GUID: "g-1", Hostname: "h", SiteID: 1, SiteSlug: "hq"}})
			require.True(t, env.IsWorkflowCompleted())
			require.Equal(t, c.asked, asked)
			for i, id := range opIDs {
				require.Equal(t, "op-1:"+string(rune('1'+i)), id, "each attempt is the granted operation's")
			}
			err := env.GetWorkflowError()
			if c.code != "" {
				var app *temporal.ApplicationError
				require.True(t, errors.As(err, &app), "%v", err)
				require.Equal(t, c.code, app.Type())
			} else {
				require.NoError(t, err)
				var st workflows.TunnelStatus
				require.NoError(t, env.GetWorkflowResult(&st))
				require.Equal(t, c.phase, st.Phase)
				require.Equal(t, "10.213.0.2", st.VirtualIP)
				require.Equal(t, c.asked, st.Attempt)
			}
			q, qerr := env.QueryWorkflow(workflows.QueryTunnelState)
			require.NoError(t, qerr)
			var st workflows.TunnelStatus
			require.NoError(t, q.Get(&st))
			require.Equal(t, c.phase, st.Phase)
			require.Equal(t, c.code, st.ErrorCode)
		})
	}
}
