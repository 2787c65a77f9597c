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

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/vnc"
	"github.com/cairn-rmm/cairn/workflows"
)

// RemoteDesktop's branches: a ready session (vnc_start before ready, the
// browser attaches and leaves, the reconnect window passes, vnc_stop, the
// end recorded), a tunnel never ready (vnc_backend_not_ready), a server
// without a banner within its step (vnc_backend_no_rfb_banner with the
// probe stage) and past the establish deadline (vnc_establish_timeout).
func TestRemoteDesktopBranches(t *testing.T) {
	t.Parallel()
	noBanner := temporal.NewApplicationErrorWithOptions("no banner", vnc.ECodeNoRFBBanner,
		temporal.ApplicationErrorOptions{Details: []any{cairn.Probe{Stage: vnc.StageBannerReadTimeout, Attempt: 1, ElapsedMS: 900}}})
	for _, c := range []struct {
		name      string
		tunnelErr error
		probeErr  error
		rfbWait   time.Duration
		others    int64
		code      string
		reason    string
		ops       []string
	}{
		{"ready, attached, left", nil, nil, 10 * time.Second, 0, "", "browser_gone", []string{proto.EventVNCStart, proto.EventVNCStop}},
		{"another session still uses the server", nil, nil, 10 * time.Second, 1, "", "browser_gone", []string{proto.EventVNCStart}},
		{"tunnel never ready", temporal.NewApplicationError("not yet", "tunnel_not_ready"), nil, 10 * time.Second, 0,
			vnc.ECodeBackendNotReady, "failed", nil},
		{"no banner", nil, noBanner, 10 * time.Second, 0, vnc.ECodeNoRFBBanner, "failed", []string{proto.EventVNCStart, proto.EventVNCStop}},
		{"no banner past the deadline", nil, noBanner, 75 * time.Second, 0, vnc.ECodeEstablishTimeout, "failed",
			[]string{proto.EventVNCStart, proto.EventVNCStop}},
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
					if in.Type == proto.EventVNCStart {
						b, _ := json.Marshal(proto.VNCStarted{ListenAddress: "10.213.0.2", Port: 5900, DisplayVirtualBounds: "1280x800+0+0"})
						return workflows.OperationResult{Payload: b}, nil
					}
					return workflows.OperationResult{}, nil
				})
			v := &activities.VNC{}
			env.RegisterActivity(v)
			env.OnActivity(v.CheckDesktopTunnel, mock.Anything, mock.Anything).Return(activities.TunnelState{VirtualIP: "10.213.0.2"}, c.tunnelErr)
			env.OnActivity(v.ProbeDesktop, mock.Anything, mock.Anything).Return(c.probeErr)
			env.OnActivity(v.OtherDesktopSessions, mock.Anything, mock.Anything, mock.Anything).Return(c.others, nil)
			var ended activities.DesktopEnd
			env.OnActivity(v.EndDesktopSession, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.DesktopEnd) error {
				ended = in
				return nil
			})
			cfg := vnc.DefaultConfig()
			cfg.RFBReadyWait = c.rfbWait
			var readyAt time.Time
			env.RegisterDelayedCallback(func() {
				env.UpdateWorkflow(workflows.UpdateDesktopAwaitReady, "u1", &testsuite.TestUpdateCallback{
					OnAccept: func() {}, OnReject: func(err error) { t.Errorf("rejected: %v", err) },
					OnComplete: func(v any, err error) {
						require.NoError(t, err)
						st := v.(workflows.DesktopStatus)
						if c.code == "" {
							require.Equal(t, workflows.DesktopPhaseReady, st.Phase)
							require.Equal(t, []string{proto.EventVNCStart}, ops, "vnc_start before ready (rule 2)")
							readyAt = env.Now()
							env.SignalWorkflow(workflows.SignalDesktopAttached, nil)
							env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalDesktopDetached, nil) }, time.Minute)
						}
					}})
			}, 0)
			env.ExecuteWorkflow(workflows.RemoteDesktop, workflows.DesktopInput{SessionID: "s-1", Actor: "admin", Config: cfg,
				Target: devices.OperationTarget{GUID: "g-1", Hostname: "h", SiteID: 1, SiteSlug: "hq"}})
			require.True(t, env.IsWorkflowCompleted())
			require.Equal(t, c.ops, ops)
			require.Equal(t, c.reason, ended.Reason)
			require.Equal(t, c.code, ended.Code)
			err := env.GetWorkflowError()
			q, qerr := env.QueryWorkflow(workflows.QueryDesktopState)
			require.NoError(t, qerr)
			var st workflows.DesktopStatus
			require.NoError(t, q.Get(&st))
			if c.code == "" {
				require.NoError(t, err)
				require.Equal(t, workflows.DesktopPhaseEnded, st.Phase)
				require.False(t, readyAt.IsZero())
				return
			}
			var app *temporal.ApplicationError
			require.True(t, errors.As(err, &app), "%v", err)
			require.Equal(t, c.code, app.Type())
			require.Equal(t, c.code, st.ErrorCode)
			if c.probeErr != nil {
				require.Equal(t, vnc.StageBannerReadTimeout, st.Probe.Stage)
			}
		})
	}
}

// A disconnect while the establishment waits cancels the wait: the
// session ends "stopped" without an error, and the Update says so.
func TestRemoteDesktopStoppedWhileEstablishing(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(workflows.DeviceOperation)
	v := &activities.VNC{}
	env.RegisterActivity(v)
	env.OnActivity(v.CheckDesktopTunnel, mock.Anything, mock.Anything).Return(activities.TunnelState{},
		temporal.NewApplicationError("not yet", "tunnel_not_ready"))
	var ended activities.DesktopEnd
	env.OnActivity(v.EndDesktopSession, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.DesktopEnd) error {
		ended = in
		return nil
	})
	var answered workflows.DesktopStatus
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdateDesktopAwaitReady, "u1", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { t.Errorf("rejected: %v", err) },
			OnComplete: func(v any, err error) {
				require.NoError(t, err)
				answered = v.(workflows.DesktopStatus)
			}})
	}, 0)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalDesktopStop, "stopped") }, 5*time.Second)
	env.ExecuteWorkflow(workflows.RemoteDesktop, workflows.DesktopInput{SessionID: "s-1", Actor: "admin", Config: vnc.DefaultConfig(),
		Target: devices.OperationTarget{GUID: "g-1", Hostname: "h", SiteID: 1, SiteSlug: "hq"}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, "stopped", ended.Reason)
	require.Empty(t, ended.Code)
	require.Equal(t, workflows.DesktopPhaseEnded, answered.Phase)
}
