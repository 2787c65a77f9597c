package workflows

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/tunnels"
)

// TunnelWorkflowID names the establishment of one device's tunnel: one
// at a time per device (a second request while one runs joins it).
func TunnelWorkflowID(guid string) string { return "tunnel:" + guid }

// JobKindTunnel is the JobKind search attribute of an establishment.
const JobKindTunnel = "vpn_tunnel_start"

// Tunnel establishment timing (values are part of the commands the
// workflow emits: change them only behind workflow.GetVersion).
const (
	// TunnelAttempts bounds how often the agent is asked.
	TunnelAttempts = 3
	// tunnelStartTimeout covers the agent's whole cycle: installing the
	// WireGuard tools, ensure, both endpoints' 8 s handshake waits, ready.
	tunnelStartTimeout = 5 * time.Minute
	// tunnelRetryBackoff is the wait before attempt n+1 (times n).
	tunnelRetryBackoff = 5 * time.Second
	// tunnelReadyWait bounds the wait for the ready report.
	tunnelReadyWait = time.Minute
)

// QueryTunnelState is the Query that reads an establishment's progress.
const QueryTunnelState = "state"

// Tunnel establishment phases.
const (
	TunnelPhaseStarting = "starting" // asking the agent
	TunnelPhaseWaiting  = "waiting"  // the agent answered; waiting for its ready report
	TunnelPhaseReady    = "ready"
	TunnelPhaseFailed   = "failed"
)

// TunnelInput is one establishment: the device and the granted
// vpn_tunnel_start operation (attempt n is sent as "<OperationID>:<n>",
// which the grant covers).
type TunnelInput struct {
	OperationID string
	Target      devices.OperationTarget
	Actor       string
	Reason      string
	Grant       string
}

// TunnelStatus is the establishment's state (the Query's answer and the
// workflow's result).
type TunnelStatus struct {
	Phase     string     `json:"phase"`
	Attempt   int        `json:"attempt"`
	Error     string     `json:"error,omitempty"`
	ErrorCode string     `json:"error_code,omitempty"`
	TunnelID  string     `json:"tunnel_id,omitempty"`
	VirtualIP string     `json:"virtual_ip,omitempty"`
	Endpoint  string     `json:"endpoint,omitempty"`
	ReadyAt   *time.Time `json:"ready_at,omitempty"`
}

// tunnelFinal are the codes another attempt cannot change.
var tunnelFinal = []string{devicetrust.ECodeDeviceQuarantined, devicetrust.ECodeDeviceRevoked, cairn.ECodeNotFound,
	cairn.ECodeAgentTooOld, "unsupported"}

// TunnelEstablish brings a device's tunnel up through the command path:
// vpn_tunnel_start to the agent (a DeviceOperation child, recorded in the
// device's activity), retried up to TunnelAttempts times with backoff
// while the failure is one another attempt may fix (no socket yet, no
// handshake, tools still installing), then the wait for the agent's
// ready report with a fresh handshake. Its state is read by the Query
// "state"; it ends with the tunnel's address or a failure whose type is
// a stable code.
func TunnelEstablish(ctx workflow.Context, in TunnelInput) (TunnelStatus, error) {
	st := TunnelStatus{Phase: TunnelPhaseStarting}
	if err := workflow.SetQueryHandler(ctx, QueryTunnelState, func() (TunnelStatus, error) { return st, nil }); err != nil {
		return st, err
	}
	payload := []byte(`{}`)
	var lastErr error
	for st.Attempt = 1; st.Attempt <= TunnelAttempts; st.Attempt++ {
		child := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID: OperationWorkflowID(in.Target.GUID, cairn.OperationID(fmt.Sprintf("%s:%d", in.OperationID, st.Attempt))),
		})
		var res OperationResult
		lastErr = workflow.ExecuteChildWorkflow(child, DeviceOperation, OperationInput{
			OperationID: cairn.OperationID(fmt.Sprintf("%s:%d", in.OperationID, st.Attempt)), Target: in.Target, Type: proto.EventVPNTunnelStart,
			Payload: payload, Kind: JobKindTunnel, Summary: "Start the VPN tunnel", Actor: in.Actor,
			Meta: map[string]any{"reason": in.Reason, "attempt": st.Attempt}, Timeout: tunnelStartTimeout, Grant: in.Grant,
		}).Get(ctx, &res)
		if lastErr == nil {
			break
		}
		st.ErrorCode, st.Error = operationFailure(lastErr, tunnelStartTimeout)
		if slices.Contains(tunnelFinal, st.ErrorCode) || st.Attempt == TunnelAttempts {
			st.Phase = TunnelPhaseFailed
			return st, temporal.NewNonRetryableApplicationError(st.Error, st.ErrorCode, nil)
		}
		if err := workflow.Sleep(ctx, time.Duration(st.Attempt)*tunnelRetryBackoff); err != nil {
			return st, err
		}
	}

	st.Phase, st.Error, st.ErrorCode = TunnelPhaseWaiting, "", ""
	wait := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    10 * time.Second,
		ScheduleToCloseTimeout: tunnelReadyWait,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2,
			MaximumInterval: 5 * time.Second, NonRetryableErrorTypes: []string{tunnels.ECodeNoTunnel}},
	})
	var t *activities.Tunnels
	var state activities.TunnelState
	if err := workflow.ExecuteActivity(wait, t.CheckTunnelReady, in.Target.GUID).Get(ctx, &state); err != nil {
		st.Phase = TunnelPhaseFailed
		st.ErrorCode, st.Error = operationFailure(err, tunnelReadyWait)
		if st.ErrorCode == ECodeOperationTimedOut {
			st.ErrorCode, st.Error = tunnels.ECodeNotReady, "the agent did not report the tunnel ready in time"
		}
		return st, temporal.NewNonRetryableApplicationError(st.Error, st.ErrorCode, nil)
	}
	now := workflow.Now(ctx)
	st.Phase, st.TunnelID, st.VirtualIP, st.Endpoint, st.ReadyAt = TunnelPhaseReady, state.TunnelID, state.VirtualIP, state.Endpoint, &now
	return st, nil
}
