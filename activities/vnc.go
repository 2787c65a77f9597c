package activities

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/tunnels"
	"github.com/cairn-rmm/cairn/internal/vnc"
)

// VNC are the remote desktop establishment's checks and its end
// (internal/vnc): the tunnel's readiness, the RFB banner probe and
// security preflight through the tunnel, and the session's end with its
// activity row and audit entry.
type VNC struct {
	Store   *db.Store
	VNC     *vnc.Service
	Devices *devices.Service
	Tunnels *tunnels.Service
	// Server reaches the tunnels: this process's end, or a gateway
	// process's client (nil in a process that reaches none: the probe
	// then answers tunnel_unavailable, retryable).
	Server tunnels.Reach
	Now    func() time.Time
}

// CheckDesktopTunnel answers once the device's tunnel is ready with a
// fresh handshake; until then tunnel_not_ready (retryable), so the
// activity's retry policy is the readiness wait.
func (v *VNC) CheckDesktopTunnel(ctx context.Context, guid string) (TunnelState, error) {
	t := &Tunnels{Tunnels: v.Tunnels, Now: v.Now}
	return t.CheckTunnelReady(ctx, guid)
}

// DesktopProbeInput is one readiness probe of the agent's VNC server.
type DesktopProbeInput struct {
	GUID      string
	Attempts  int
	Wait      time.Duration
	Preflight bool
}

// ProbeDesktop reads the server's 12-byte banner through the tunnel
// (rule 6) and, with Preflight, its security types: no password
// authentication offered fails for good (vnc_password_not_enabled). A
// missing banner fails with vnc_backend_no_rfb_banner and the probe's
// stage, attempt and elapsed time as the error's details.
func (v *VNC) ProbeDesktop(ctx context.Context, in DesktopProbeInput) error {
	if v.Server == nil {
		return temporal.NewApplicationError("this worker serves no tunnels: the remote desktop gateway runs in cairn serve", tunnels.ECodeUnavailable)
	}
	dial := func(ctx context.Context) (net.Conn, error) {
		return v.Server.Dial(ctx, cairn.DeviceGUID(in.GUID), proto.VNCPort)
	}
	if _, err := vnc.ProbeBanner(ctx, dial, in.Attempts, in.Wait); err != nil {
		return probeError(err)
	}
	if in.Preflight {
		if err := vnc.Preflight(ctx, dial, in.Wait); err != nil {
			return probeError(err)
		}
	}
	return nil
}

func probeError(err error) error {
	var be *vnc.BannerError
	if errors.As(err, &be) {
		err = be.CairnError()
	}
	var ce *cairn.Error
	if errors.As(err, &ce) && ce.Probe != nil {
		return temporal.NewApplicationErrorWithOptions(ce.Message, ce.Code, temporal.ApplicationErrorOptions{
			Details: []any{*ce.Probe}})
	}
	if errors.As(err, &ce) && ce.Code == vnc.ECodePasswordNotEnabled {
		return temporal.NewNonRetryableApplicationError(ce.Message, ce.Code, nil)
	}
	return ApplicationError(err)
}

// OtherDesktopSessions counts the device's other sessions not ended: the
// agent's server is shared, so a session's end stops it only when none
// is left.
func (v *VNC) OtherDesktopSessions(ctx context.Context, guid, sessionID string) (int64, error) {
	n, err := v.Store.VNCSessionCountOthersActive(ctx, db.VNCSessionCountOthersActiveParams{DeviceGuid: cairn.DeviceGUID(guid), ID: sessionID})
	return n, ApplicationError(err)
}

// DesktopEnd is how a session ended.
type DesktopEnd struct {
	SessionID string
	GUID      string
	Hostname  string
	SiteID    int64
	Actor     string
	// Reason: stopped, browser_closed, token_expired, failed, ...
	Reason  string
	Code    string
	Message string
	// FirstFrameAt, ReadyAt are what the session reached (for the row).
	Started time.Time
}

// EndDesktopSession ends the session once, with its device activity row
// (kind remote_desktop, keyed by the workflow's ID so a retry adds none)
// and an audit entry, in one transaction.
func (v *VNC) EndDesktopSession(ctx context.Context, in DesktopEnd) error {
	return ApplicationError(v.Store.InTx(ctx, func(q *db.Queries) error {
		sess, ended, err := v.VNC.End(ctx, q, in.SessionID, in.Reason, in.Code, in.Message)
		if err != nil || !ended {
			return err
		}
		status, summary := "completed", "Remote desktop session ("+in.Reason+")"
		if in.Code != "" {
			status, summary = "failed", "Remote desktop session failed: "+in.Code
		}
		meta, _ := json.Marshal(map[string]any{"session_id": sess.ID, "protocol": sess.Protocol, "reason": in.Reason,
			"error_code": in.Code, "ready_at": sess.ReadyAt, "attached_at": sess.AttachedAt, "first_frame_at": sess.FirstFrameAt})
		guid := sess.GUID
		site := int64(sess.SiteID)
		opID := cairn.OperationID("remote-desktop:" + sess.ID)
		if _, err := q.DeviceActivityInsert(ctx, db.DeviceActivityInsertParams{DeviceGuid: &guid, Hostname: sess.Hostname,
			SiteID: &site, Kind: "remote_desktop", Summary: summary, Actor: sess.Operator, Status: status, Metadata: meta,
			FinishedAt: sess.EndedAt, OperationID: &opID}); err != nil {
			return err
		}
		outcome := "ok"
		if in.Code != "" {
			outcome = in.Code
		}
		return q.AuditInsert(ctx, db.AuditInsertParams{Username: sess.Operator, Action: "remote_desktop.end",
			Target: "hostname=" + sess.Hostname + " session=" + sess.ID + " reason=" + in.Reason, Status: 200, Outcome: outcome})
	}))
}
