package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/rdp"
	"github.com/cairn-rmm/cairn/internal/vnc"
	"github.com/cairn-rmm/cairn/workflows"
)

// RemoteDesktop's RDP branch (rules 3-5): rdp_start, the probe, the
// bridge, ready; a failed probe (or rdp_start's rdp_not_ready) gets
// exactly one rdp_transport_recovery and one more probe, then
// rdp_backend_not_ready; refused credentials fail with the bridge's code;
// the bridge is stopped at the end whenever it was started, and the
// agent's RDP server never is. The bridge's input names the credential by
// ID only.
func TestRemoteDesktopRDPBranches(t *testing.T) {
	t.Parallel()
	down := temporal.NewApplicationError("no X.224 Connection Confirm", rdp.ECodeBackendNotReady)
	notReady := temporal.NewNonRetryableApplicationError("xrdp is not listening", proto.CodeRDPNotReady, nil)
	for _, c := range []struct {
		name      string
		startErr  error
		probeErrs []error // per probe, the last repeated
		bridgeErr error
		code      string
		reason    string
		ops       []string
		probes    int // that succeeded
		bridge    bool
	}{
		{"ready, attached, left", nil, []error{nil}, nil, "", "browser_gone", []string{proto.EventRDPStart}, 1, true},
		{"recovered", nil, []error{down, nil}, nil, "", "browser_gone",
			[]string{proto.EventRDPStart, proto.EventRDPTransportRecovery}, 1, true},
		{"rdp_start not ready, recovered", notReady, []error{nil}, nil, "", "browser_gone",
			[]string{proto.EventRDPStart, proto.EventRDPTransportRecovery}, 1, true},
		{"never answers", nil, []error{down}, nil, rdp.ECodeBackendNotReady, "failed",
			[]string{proto.EventRDPStart, proto.EventRDPTransportRecovery}, 0, false},
		{"credentials refused", nil, []error{nil}, temporal.NewNonRetryableApplicationError("refused", rdp.ECodeAuthFailed, nil),
			rdp.ECodeAuthFailed, "failed", []string{proto.EventRDPStart}, 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			env.RegisterWorkflow(workflows.DeviceOperation)
			var ops []string
			env.OnWorkflow(workflows.DeviceOperation, mock.Anything, mock.Anything).Return(
				func(_ workflow.Context, in workflows.OperationInput) (workflows.OperationResult, error) {
					ops = append(ops, in.Type)
					if in.Type == proto.EventRDPStart && c.startErr != nil {
						return workflows.OperationResult{}, c.startErr
					}
					b, _ := json.Marshal(proto.RDPStarted{ListenAddress: "10.213.0.2", Port: 3389, Server: "xrdp"})
					return workflows.OperationResult{Payload: b}, nil
				})
			v := &activities.VNC{}
			r := &activities.RDP{}
			env.RegisterActivity(v)
			env.RegisterActivity(r)
			env.OnActivity(v.CheckDesktopTunnel, mock.Anything, mock.Anything).Return(activities.TunnelState{VirtualIP: "10.213.0.2"}, nil)
			probes, okProbes := 0, 0
			env.OnActivity(r.ProbeRDP, mock.Anything, mock.Anything).Return(func(context.Context, activities.RDPProbeInput) (rdp.ProbeResult, error) {
				err := c.probeErrs[min(probes, len(c.probeErrs)-1)]
				probes++
				if err != nil {
					return rdp.ProbeResult{}, err
				}
				okProbes++
				return rdp.ProbeResult{Selected: rdp.ProtoHybrid}, nil
			})
			var bridged activities.RDPBridgeInput
			env.OnActivity(r.StartRDPBridge, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.RDPBridgeInput) error {
				bridged = in
				return c.bridgeErr
			})
			stopped := 0
			env.OnActivity(r.StopRDPBridge, mock.Anything, mock.Anything).Return(func(context.Context, string) error {
				stopped++
				return nil
			})
			var ended activities.DesktopEnd
			env.OnActivity(v.EndDesktopSession, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.DesktopEnd) error {
				ended = in
				return nil
			})
			env.RegisterDelayedCallback(func() {
				env.UpdateWorkflow(workflows.UpdateDesktopAwaitReady, "u1", &testsuite.TestUpdateCallback{
					OnAccept: func() {}, OnReject: func(err error) { t.Errorf("rejected: %v", err) },
					OnComplete: func(v any, err error) {
						require.NoError(t, err)
						st := v.(workflows.DesktopStatus)
						require.Equal(t, rdp.Protocol, st.Protocol)
						if c.code == "" {
							require.Equal(t, workflows.DesktopPhaseReady, st.Phase)
							env.SignalWorkflow(workflows.SignalDesktopAttached, nil)
							env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalDesktopDetached, nil) }, time.Minute)
						}
					}})
			}, 0)
			env.ExecuteWorkflow(workflows.RemoteDesktop, workflows.DesktopInput{SessionID: "s-1", Actor: "admin", Config: vnc.DefaultConfig(),
				Target: devices.OperationTarget{GUID: "g-1", Hostname: "h", SiteID: 4, SiteSlug: "hq"}, Protocol: rdp.Protocol,
				RDP: &workflows.DesktopRDP{CredentialID: 9, Width: 1024, Height: 768, Quality: "quality"}})
			require.True(t, env.IsWorkflowCompleted())
			require.Equal(t, c.ops, ops, "never vnc_start or vnc_stop; one recovery at most")
			require.Equal(t, c.probes, okProbes)
			require.Equal(t, c.reason, ended.Reason)
			require.Equal(t, c.code, ended.Code)
			if c.bridge {
				require.Equal(t, activities.RDPBridgeInput{SessionID: "s-1", GUID: "g-1", SiteID: 4, CredentialID: 9, Width: 1024,
					Height: 768, Quality: "quality"}, bridged)
				require.Equal(t, 1, stopped, "the bridge is stopped at the end")
			} else {
				require.Zero(t, stopped)
			}
			err := env.GetWorkflowError()
			if c.code == "" {
				require.NoError(t, err)
				return
			}
			var app *temporal.ApplicationError
			require.True(t, errors.As(err, &app), "%v", err)
			require.Equal(t, c.code, app.Type())
		})
	}
}
