package workflows

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/rdp"
	"github.com/cairn-rmm/cairn/internal/tunnels"
)

// rdpFailure is why an RDP establishment failed: a final code (rule 5's
// rdp_backend_not_ready, a refused credential), or a step's error for
// RemoteDesktop's usual mapping (the deadline, the tunnel, the agent).
type rdpFailure struct {
	code, msg string
	err       error
	wait      time.Duration
	clipped   bool
}

// establishRDP is RemoteDesktop's RDP branch after the tunnel's readiness
// (SPEC "Remote desktop rules" 3-5; docs/architecture.md "Remote desktop
// (RDP)"): rdp_start to the agent, the X.224 probe of its TCP 3389
// through the tunnel; on a failure (of either) one rdp_transport_recovery
// and one more probe, then rdp_backend_not_ready; then the session's
// bridge, started by an activity in the process holding the WireGuard,
// which resolves the credential itself so no secret enters the history.
// Each wait is cut to what is left of the establish deadline.
func establishRDP(ctx, ectx workflow.Context, in DesktopInput, st *DesktopStatus, step func(time.Duration) (time.Duration, bool),
	bridgeStarted *bool) *rdpFailure {
	var r *activities.RDP
	op := func(typ, suffix, summary, grant string, wait time.Duration) (OperationResult, error) {
		opID := cairn.OperationID(in.SessionID + suffix)
		child := workflow.WithChildOptions(ectx, workflow.ChildWorkflowOptions{WorkflowID: OperationWorkflowID(in.Target.GUID, opID)})
		var res OperationResult
		err := workflow.ExecuteChildWorkflow(child, DeviceOperation, OperationInput{OperationID: opID, Target: in.Target,
			Type: typ, Payload: DesktopRDPPayload(in.SessionID), Kind: JobKindRemoteDesktop, Summary: summary, Actor: in.Actor,
			Meta: map[string]any{"session_id": in.SessionID}, Timeout: wait, Grant: grant}).Get(ctx, &res)
		return res, err
	}
	probe := func(wait time.Duration, retries bool) error {
		policy := &temporal.RetryPolicy{MaximumAttempts: 1}
		if retries {
			policy = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 1.5, MaximumInterval: 3 * time.Second}
		}
		pctx := workflow.WithActivityOptions(ectx, workflow.ActivityOptions{StartToCloseTimeout: wait, ScheduleToCloseTimeout: wait,
			RetryPolicy: policy})
		var res rdp.ProbeResult
		err := workflow.ExecuteActivity(pctx, r.ProbeRDP, activities.RDPProbeInput{GUID: string(in.Target.GUID),
			Wait: min(wait, in.Config.PreflightTimeout)}).Get(ctx, &res)
		if err == nil {
			st.RDPProbe = &res
		}
		return err
	}
	// recoverable: a failure rule 5's recovery may fix (the agent's
	// server not listening, the probe unanswered); anything else (the
	// agent refusing, unsupported, the tunnel gone) fails as it is.
	recoverable := func(err error, wait time.Duration) bool {
		code, _ := operationFailure(err, wait)
		return code == proto.CodeRDPNotReady || code == rdp.ECodeBackendNotReady
	}

	// 2. rdp_start.
	st.Phase = DesktopPhaseStarting
	wait, clipped := step(in.Config.StartReadyWait)
	res, err := op(proto.EventRDPStart, ":start", "Make the RDP server reachable", in.StartGrant, wait)
	if err != nil && !recoverable(err, wait) {
		return &rdpFailure{err: err, wait: wait, clipped: clipped}
	}
	if err == nil {
		var started proto.RDPStarted
		if json.Unmarshal(res.Payload, &started) == nil {
			st.Started = &proto.VNCStarted{ListenAddress: started.ListenAddress, Port: started.Port}
		}
		// 3. The probe (one attempt).
		st.Phase = DesktopPhaseProbing
		wait, clipped = step(in.Config.PreflightTimeout)
		err = probe(wait, false)
		if err != nil && !recoverable(err, wait) {
			return &rdpFailure{err: err, wait: wait, clipped: clipped}
		}
	}
	if err != nil {
		// Rule 5: one rdp_transport_recovery, one more probe, then
		// rdp_backend_not_ready.
		first := err
		st.Recovered = true
		wait, _ = step(in.Config.StartReadyWait)
		_, rerr := op(proto.EventRDPTransportRecovery, ":recovery", "Recover the RDP transport", in.RecoveryGrant, wait)
		if rerr == nil {
			st.Phase = DesktopPhaseProbing
			wait, _ = step(in.Config.RFBReadyWait)
			rerr = probe(wait, true)
		}
		if rerr != nil {
			_, why := operationFailure(rerr, wait)
			_, was := operationFailure(first, wait)
			code, _ := operationFailure(rerr, wait)
			if code == tunnels.ECodeNoTunnel || code == tunnels.ECodeUnavailable {
				return &rdpFailure{err: rerr, wait: wait}
			}
			return &rdpFailure{code: rdp.ECodeBackendNotReady,
				msg: "the agent's RDP server did not answer through the tunnel after one transport recovery: " + was + "; then " + why}
		}
	}

	// 4. The bridge (it runs until StopRDPBridge).
	wait, clipped = step(in.Config.EstablishDeadline)
	bctx := workflow.WithActivityOptions(ectx, workflow.ActivityOptions{StartToCloseTimeout: wait, ScheduleToCloseTimeout: wait,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	p := DesktopRDP{}
	if in.RDP != nil {
		p = *in.RDP
	}
	*bridgeStarted = true
	if err := workflow.ExecuteActivity(bctx, r.StartRDPBridge, activities.RDPBridgeInput{SessionID: in.SessionID,
		GUID: string(in.Target.GUID), SiteID: int64(in.Target.SiteID), CredentialID: p.CredentialID, Width: p.Width,
		Height: p.Height, DPI: p.DPI, Quality: p.Quality}).Get(ctx, nil); err != nil {
		return &rdpFailure{err: err, wait: wait, clipped: clipped}
	}
	return nil
}
