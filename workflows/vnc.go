package workflows

import (
	"encoding/json"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/rdp"
	"github.com/cairn-rmm/cairn/internal/tunnels"
	"github.com/cairn-rmm/cairn/internal/vnc"
)

// RemoteDesktopWorkflowID names one session's establishment and life.
func RemoteDesktopWorkflowID(sessionID string) string { return "remote-desktop:" + sessionID }

// JobKindRemoteDesktop is the JobKind search attribute of a session.
const JobKindRemoteDesktop = "remote_desktop"

// Remote desktop Query, Update and signals.
const (
	QueryDesktopState = "state"
	// UpdateDesktopAwaitReady answers once the establishment is ready or
	// failed (the API issues the browser's token only after ready).
	UpdateDesktopAwaitReady = "await_ready"
	// SignalDesktopAttached: the browser's socket attached (the gateway
	// runs); SignalDesktopDetached: it closed; SignalDesktopStop: the
	// operator disconnected.
	SignalDesktopAttached = "attached"
	SignalDesktopDetached = "detached"
	SignalDesktopStop     = "stop"
)

// Remote desktop phases.
const (
	DesktopPhaseWaitingTunnel = "waiting_tunnel"
	DesktopPhaseStarting      = "starting"
	DesktopPhaseProbing       = "probing"
	DesktopPhaseReady         = "ready"
	DesktopPhaseLive          = "live"
	DesktopPhaseEnded         = "ended"
	DesktopPhaseFailed        = "failed"
)

// DesktopInput is one session. The timings are the SERVICE_VNC_* settings
// when it started (a history replays with its own).
type DesktopInput struct {
	SessionID string
	Target    devices.OperationTarget
	Actor     string
	// StartGrant and StopGrant authorise the session's vnc_start and
	// vnc_stop (operation IDs "<session>:start" and "<session>:stop").
	StartGrant string
	StopGrant  string
	Config     vnc.Config
	// Protocol is vnc ("" in histories from before RDP: vnc) or rdp.
	Protocol string `json:",omitempty"`
	// RDP is an RDP session's bridge: the stored credential's ID, or none
	// for the manual credentials the establishing Engine holds in memory
	// (never a secret here), the display and the quality.
	RDP *DesktopRDP `json:",omitempty"`
	// RecoveryGrant authorises the session's one rdp_transport_recovery
	// (operation "<session>:recovery"); StartGrant is then rdp_start's.
	RecoveryGrant string `json:",omitempty"`
}

// DesktopRDP is an RDP session's bridge parameters.
type DesktopRDP struct {
	CredentialID int64
	Width        int
	Height       int
	DPI          int
	Quality      string
}

// DesktopStatus is the session's state (the Query's answer and the
// workflow's result).
type DesktopStatus struct {
	SessionID string       `json:"session_id"`
	Phase     string       `json:"phase"`
	Error     string       `json:"error,omitempty"`
	ErrorCode string       `json:"error_code,omitempty"`
	Probe     *cairn.Probe `json:"probe,omitempty"`
	VirtualIP string       `json:"virtual_ip,omitempty"`
	// Started is the agent's vnc_start answer (listen address, display
	// topology and virtual bounds).
	Started   *proto.VNCStarted `json:"started,omitempty"`
	ReadyAt   *time.Time        `json:"ready_at,omitempty"`
	EndReason string            `json:"end_reason,omitempty"`
	// Protocol is rdp for an RDP session (omitted: vnc).
	Protocol string `json:"protocol,omitempty"`
	// RDPProbe is the last X.224 probe's answer (RDP sessions); Recovered
	// says rule 5's rdp_transport_recovery was sent.
	RDPProbe  *rdp.ProbeResult `json:"rdp_probe,omitempty"`
	Recovered bool             `json:"rdp_recovered,omitempty"`
}

// DesktopRDPPayload is rdp_start's and rdp_transport_recovery's payload.
func DesktopRDPPayload(sessionID string) []byte {
	b, _ := json.Marshal(proto.RDPStart{SessionID: sessionID})
	return b
}

// DesktopStartPayload is vnc_start's payload for a session (the grant
// covers exactly these bytes).
func DesktopStartPayload(sessionID string) []byte {
	b, _ := json.Marshal(proto.VNCStart{SessionID: sessionID})
	return b
}

// DesktopStopPayload is vnc_stop's.
func DesktopStopPayload(sessionID string) []byte {
	b, _ := json.Marshal(proto.VNCStop{SessionID: sessionID})
	return b
}

// RemoteDesktop establishes a VNC session and keeps it until it ends
// (SPEC "Remote desktop rules" 2, 6, 8; docs/architecture.md "Remote
// desktop (VNC)"): the tunnel's readiness wait, vnc_start (before any
// token: the API issues it only once this reports ready), the RFB banner
// probe and security preflight through the tunnel, all within the
// establish deadline (vnc_establish_timeout past it). Ready, it waits for
// the browser (the token's life), keeps the server while the browser is
// attached, and after a detach waits StopDebounce for a reconnect before
// vnc_stop. The end is recorded with an activity row and audit entry.
func RemoteDesktop(ctx workflow.Context, in DesktopInput) (DesktopStatus, error) {
	st := DesktopStatus{SessionID: in.SessionID, Phase: DesktopPhaseWaitingTunnel}
	if err := workflow.SetQueryHandler(ctx, QueryDesktopState, func() (DesktopStatus, error) { return st, nil }); err != nil {
		return st, err
	}
	settled := func() bool {
		return st.Phase != DesktopPhaseWaitingTunnel && st.Phase != DesktopPhaseStarting && st.Phase != DesktopPhaseProbing
	}
	if err := workflow.SetUpdateHandler(ctx, UpdateDesktopAwaitReady, func(ctx workflow.Context) (DesktopStatus, error) {
		err := workflow.Await(ctx, settled)
		return st, err
	}); err != nil {
		return st, err
	}
	stopCh := workflow.GetSignalChannel(ctx, SignalDesktopStop)
	attachCh := workflow.GetSignalChannel(ctx, SignalDesktopAttached)
	detachCh := workflow.GetSignalChannel(ctx, SignalDesktopDetached)

	deadline := workflow.Now(ctx).Add(in.Config.EstablishDeadline)
	// A stop while establishing cancels the step under way (ectx); the
	// watcher gives up once establishment settled, and the session's life
	// then reads stops itself.
	ectx, cancelEst := workflow.WithCancel(ctx)
	defer cancelEst()
	stopped := ""
	establishing := workflow.NewBufferedChannel(ctx, 1)
	workflow.Go(ctx, func(g workflow.Context) {
		sel := workflow.NewSelector(g)
		sel.AddReceive(stopCh, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(g, &stopped)
			if stopped == "" {
				stopped = "stopped"
			}
			cancelEst()
		})
		sel.AddReceive(establishing, func(c workflow.ReceiveChannel, _ bool) { c.Receive(g, nil) })
		sel.Select(g)
	})
	serverStarted, bridgeStarted := false, false
	end := func(reason, code, msg string) (DesktopStatus, error) {
		establishing.SendAsync(true)
		st.EndReason = reason
		if bridgeStarted {
			// The session's RDP bridge runs in the Engine process that
			// holds the WireGuard (the agent's RDP server is not stopped).
			bctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
				ScheduleToCloseTimeout: 2 * time.Minute})
			var r *activities.RDP
			_ = workflow.ExecuteActivity(bctx, r.StopRDPBridge, in.SessionID).Get(ctx, nil)
		}
		if serverStarted {
			// The agent's server is shared by the device's sessions: the
			// last one to end stops it.
			var others int64
			octx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second,
				ScheduleToCloseTimeout: time.Minute})
			var v *activities.VNC
			if err := workflow.ExecuteActivity(octx, v.OtherDesktopSessions, string(in.Target.GUID), in.SessionID).Get(ctx, &others); err != nil || others == 0 {
				stopServer(ctx, in)
			}
		}
		rec := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
			ScheduleToCloseTimeout: 5 * time.Minute})
		var v *activities.VNC
		_ = workflow.ExecuteActivity(rec, v.EndDesktopSession, activities.DesktopEnd{SessionID: in.SessionID,
			GUID: string(in.Target.GUID), Hostname: in.Target.Hostname, SiteID: int64(in.Target.SiteID), Actor: in.Actor,
			Reason: reason, Code: code, Message: msg}).Get(ctx, nil)
		if code != "" {
			st.Phase, st.ErrorCode, st.Error = DesktopPhaseFailed, code, msg
			return st, temporal.NewNonRetryableApplicationError(msg, code, nil)
		}
		st.Phase = DesktopPhaseEnded
		return st, nil
	}
	// fail ends the establishment after a step failed. A step whose wait
	// the deadline cut short and that failed with what waiting longer
	// might have fixed failed on the deadline (vnc_establish_timeout);
	// otherwise the step's own code, a timeout or a retryable wait
	// becoming fallback.
	fail := func(err error, step time.Duration, clipped bool, fallback string) (DesktopStatus, error) {
		if stopped != "" {
			return end(stopped, "", "")
		}
		code, msg := operationFailure(err, step)
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.HasDetails() {
			var p cairn.Probe
			if app.Details(&p) == nil {
				st.Probe = &p
			}
		}
		waiting := code == ECodeOperationTimedOut || code == tunnels.ECodeNotReady || code == tunnels.ECodeUnavailable ||
			code == vnc.ECodeNoRFBBanner || code == proto.CodeVNCNotReady
		switch {
		case waiting && clipped:
			code, msg = vnc.ECodeEstablishTimeout, "the remote desktop was not ready within the establish deadline ("+in.Config.EstablishDeadline.String()+"): "+msg
		case waiting && fallback != "" && code != vnc.ECodeNoRFBBanner && code != proto.CodeVNCNotReady:
			code = fallback
		}
		return end("failed", code, msg)
	}
	// step is a step's wait, cut to what is left of the deadline, and
	// whether the deadline cut it.
	step := func(d time.Duration) (time.Duration, bool) {
		left := deadline.Sub(workflow.Now(ctx))
		return min(d, left), left <= d
	}

	// 1. The tunnel (readiness wait).
	wait, clipped := step(in.Config.ReadyWait)
	actx := workflow.WithActivityOptions(ectx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second,
		ScheduleToCloseTimeout: wait,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 3 * time.Second,
			NonRetryableErrorTypes: []string{tunnels.ECodeNoTunnel}}})
	var v *activities.VNC
	var tun activities.TunnelState
	if err := workflow.ExecuteActivity(actx, v.CheckDesktopTunnel, string(in.Target.GUID)).Get(ctx, &tun); err != nil {
		return fail(err, wait, clipped, vnc.ECodeBackendNotReady)
	}
	st.VirtualIP = tun.VirtualIP

	if in.Protocol == rdp.Protocol {
		st.Protocol = rdp.Protocol
		if f := establishRDP(ctx, ectx, in, &st, step, &bridgeStarted); f != nil {
			if f.code != "" && stopped == "" {
				return end("failed", f.code, f.msg)
			}
			return fail(f.err, f.wait, f.clipped, rdp.ECodeBackendNotReady)
		}
		establishing.SendAsync(true)
		if stopped != "" {
			return end(stopped, "", "")
		}
		return desktopLife(ctx, in, &st, stopCh, attachCh, detachCh, end)
	}

	// 2. vnc_start (rule 2: before the token).
	st.Phase = DesktopPhaseStarting
	wait, clipped = step(in.Config.StartReadyWait)
	opID := cairn.OperationID(in.SessionID + ":start")
	child := workflow.WithChildOptions(ectx, workflow.ChildWorkflowOptions{WorkflowID: OperationWorkflowID(in.Target.GUID, opID)})
	var res OperationResult
	if err := workflow.ExecuteChildWorkflow(child, DeviceOperation, OperationInput{OperationID: opID, Target: in.Target,
		Type: proto.EventVNCStart, Payload: DesktopStartPayload(in.SessionID), Kind: JobKindRemoteDesktop,
		Summary: "Start the VNC server", Actor: in.Actor, Meta: map[string]any{"session_id": in.SessionID}, Timeout: wait,
		Grant: in.StartGrant}).Get(ctx, &res); err != nil {
		return fail(err, wait, clipped, vnc.ECodeBackendNotReady)
	}
	serverStarted = true
	var started proto.VNCStarted
	if json.Unmarshal(res.Payload, &started) == nil {
		st.Started = &started
	}

	// 3. The banner probe and security preflight through the tunnel.
	st.Phase = DesktopPhaseProbing
	wait, clipped = step(in.Config.RFBReadyWait)
	pctx := workflow.WithActivityOptions(ectx, workflow.ActivityOptions{StartToCloseTimeout: wait, ScheduleToCloseTimeout: wait,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 1.5, MaximumInterval: 3 * time.Second,
			NonRetryableErrorTypes: []string{vnc.ECodePasswordNotEnabled, vnc.ECodeAuthLockout}}})
	if err := workflow.ExecuteActivity(pctx, v.ProbeDesktop, activities.DesktopProbeInput{GUID: string(in.Target.GUID), Attempts: 1,
		Wait: min(wait, in.Config.PreflightTimeout), Preflight: in.Config.Preflight}).Get(ctx, nil); err != nil {
		return fail(err, wait, clipped, vnc.ECodeNoRFBBanner)
	}
	establishing.SendAsync(true)
	if stopped != "" {
		return end(stopped, "", "")
	}
	return desktopLife(ctx, in, &st, stopCh, attachCh, detachCh, end)
}

// desktopLife is a ready session's life (both protocols): the browser
// attaches within the token's life; after it leaves, a reconnect window.
func desktopLife(ctx workflow.Context, in DesktopInput, st *DesktopStatus, stopCh, attachCh, detachCh workflow.ReceiveChannel,
	end func(reason, code, msg string) (DesktopStatus, error)) (DesktopStatus, error) {
	now := workflow.Now(ctx)
	st.Phase, st.ReadyAt = DesktopPhaseReady, &now

	// 4. The session's life: the browser attaches within the token's
	// life; after it leaves, a reconnect window.
	timeout := in.Config.TokenTTL
	attached := false
	for {
		var reason string
		sel := workflow.NewSelector(ctx)
		tctx, cancel := workflow.WithCancel(ctx)
		timer := workflow.NewTimer(tctx, timeout)
		sel.AddReceive(stopCh, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, &reason)
			if reason == "" {
				reason = "stopped"
			}
		})
		sel.AddReceive(attachCh, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			st.Phase, attached = DesktopPhaseLive, true
		})
		sel.AddReceive(detachCh, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			st.Phase = DesktopPhaseReady
		})
		sel.AddFuture(timer, func(f workflow.Future) {
			if f.Get(ctx, nil) == nil {
				reason = "browser_gone"
				if !attached {
					reason = "token_expired"
				}
			}
		})
		sel.Select(ctx)
		cancel()
		if reason != "" {
			return end(reason, "", "")
		}
		switch st.Phase {
		case DesktopPhaseLive:
			timeout = desktopMaxLife
		default:
			timeout = in.Config.StopDebounce
		}
	}
}

// desktopMaxLife bounds one attachment (a browser that never detaches).
const desktopMaxLife = 24 * time.Hour

// stopServer sends vnc_stop (best effort: the agent's server is stopped
// at its next start anyway).
func stopServer(ctx workflow.Context, in DesktopInput) {
	opID := cairn.OperationID(in.SessionID + ":stop")
	child := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: OperationWorkflowID(in.Target.GUID, opID)})
	_ = workflow.ExecuteChildWorkflow(child, DeviceOperation, OperationInput{OperationID: opID, Target: in.Target,
		Type: proto.EventVNCStop, Payload: DesktopStopPayload(in.SessionID), Kind: JobKindRemoteDesktop,
		Summary: "Stop the VNC server", Actor: in.Actor, Meta: map[string]any{"session_id": in.SessionID},
		Timeout: time.Minute, Grant: in.StopGrant}).Get(ctx, nil)
}
