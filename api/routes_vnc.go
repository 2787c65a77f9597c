package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/credentials"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/gateway"
	"github.com/cairn-rmm/cairn/internal/rdp"
	"github.com/cairn-rmm/cairn/internal/shells"
	"github.com/cairn-rmm/cairn/internal/tunnels"
	"github.com/cairn-rmm/cairn/internal/vnc"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// VNCArea are the remote desktop (VNC) routes (SPEC "Remote desktop,
// shell, tunnel", "Remote desktop rules"; docs/api.md "Remote desktop").
type VNCArea struct {
	VNC     *vnc.Service
	Tunnels *tunnels.Service
	// Server reaches the tunnels: the in-process gateway dials the agent's
	// server through it (nil: this process has no gateway).
	Server tunnels.Reach
	// Gateway is a gateway process that holds the WireGuard and runs the
	// RFB gateway (CAIRN_GATEWAY_URL): the browser's socket is relayed to
	// it, and it reports the session's events itself. Nil: the gateway
	// runs in this process.
	Gateway *gateway.Client
	Starter workflowclient.DesktopStarter
	// RDP runs this process's RDP bridges and holds manual credentials
	// while their session establishes; Credentials are the stored ones
	// (protocol rdp; nil: RDP is not served).
	RDP         *rdp.Service
	Credentials *credentials.Service
}

type vncAPI struct {
	*Server
	VNCArea
}

// desktopTargetErrors are what naming a session's device may answer.
var desktopTargetErrors = []string{cairn.ECodeNotFound, devicetrust.ECodeDeviceQuarantined, devicetrust.ECodeDeviceRevoked,
	cairn.ECodeAgentSocketMissing, cairn.ECodeAgentTooOld, proto.CodeUnsupportedPlatform, shells.ECodeTokenInvalid, shells.ECodeNotImplemented,
	ECodeTemporalUnavailable, cairn.ECodeUnavailable, vnc.ECodeNoRFBBanner, vnc.ECodePasswordNotEnabled, vnc.ECodeAuthLockout,
	vnc.ECodeBackendNotReady, vnc.ECodeEstablishTimeout, vnc.ECodeAuthFailed, vnc.ECodeAuthRetryInProgress, vnc.ECodeAuthRetrySettling, vnc.ECodeSessionEnded, tunnels.ECodeNoTunnel, tunnels.ECodeNotReady, tunnels.ECodeUnavailable,
	proto.CodeVNCNotReady, rdp.ECodeBackendNotReady, rdp.ECodeCredentialInvalid, rdp.ECodeAuthFailed, rdp.ECodeConnectFailed,
	rdp.ECodeBridgeUnavailable, proto.CodeRDPNotReady}

func (d VNCArea) routes(s *Server) []Route {
	a := &vncAPI{Server: s, VNCArea: d}
	return []Route{
		{"POST", proto.PathVNCEnsure, AuthDevice, jsonAction(s, http.StatusOK, false, a.ensure).
			Summary("Advertise the VNC role's readiness and store its system:vnc row; answers the firewall scope (the Engine's tunnel /32). Never carries the VNC password."),
			"Agent: ensure the VNC role"},
		{"POST", "/api/vnc/establish", AuthToken, jsonAction(s, http.StatusOK, false, a.establish).
			Summary("Establish a remote desktop session by protocol (vnc, the default, or rdp). Runs the RemoteDesktop workflow on the device's site queue within SERVICE_VNC_ESTABLISH_DEADLINE_SECONDS: tunnel readiness, then for vnc vnc_start, the RFB banner probe and security preflight; for rdp rdp_start, the X.224 probe of TCP 3389 through the tunnel (one rdp_transport_recovery, then rdp_backend_not_ready) and the Engine's RDP bridge logged in with the stored (credential_id) or manual credentials. Then answers the browser's one-time token and socket URL. No password ever reaches the browser or the answer.").
			Errors(desktopTargetErrors...), "Establish a remote desktop session"},
		{"POST", "/api/vnc/disconnect", AuthToken, jsonAction(s, http.StatusOK, false, a.disconnect).
			Summary("Close a remote desktop session: its workflow sends vnc_stop and records the end.").
			Errors(cairn.ECodeNotFound, ECodeTemporalUnavailable, cairn.ECodeUnavailable), "Close a remote desktop session"},
		{"POST", "/api/vnc/handoff", AuthToken, jsonAction(s, http.StatusOK, false, a.handoff).
			Summary("Take a ready or live remote desktop session over (another operator, or the owner in another browser): the browser relayed now is disconnected, the caller becomes the session's owner and gets a new one-time token and socket URL, with the display topology the agent reads now (vnc_refresh). The session's server keeps running.").
			Errors(cairn.ECodeNotFound, devicetrust.ECodeDeviceQuarantined, devicetrust.ECodeDeviceRevoked, cairn.ECodeAgentTooOld,
				proto.CodeUnsupportedPlatform, vnc.ECodeSessionEnded, vnc.ECodeBackendNotReady, ECodeTemporalUnavailable, cairn.ECodeUnavailable),
			"Take a remote desktop session over"},
		{"GET", "/api/vnc/sessions", AuthToken, getAction(s, a.sessions).Summary("Active remote desktop sessions in the operator's sites."), "List remote desktop sessions"},
		{"GET", "/api/vnc/sessions/{id}", AuthToken, getAction(s, a.session).
			Summary("A session and its establishment's state (the RemoteDesktop workflow's Query).").
			Errors(cairn.ECodeNotFound, ECodeTemporalUnavailable, cairn.ECodeUnavailable), "Get a remote desktop session"},
		{"GET", "/api/vnc/viewers", AuthToken, getAction(s, a.viewers).
			Summary("Remote desktop gateway availability (this replica holds the Engine's WireGuard) and the operators with live sessions."),
			"Get remote desktop gateway availability"},
		{"POST", "/api/internal/vnc/session-event", AuthInternal, jsonAction(s, http.StatusOK, false, a.sessionEvent).
			Summary("A remote desktop gateway reports a session event (HMAC-signed, Internal class): first_frame records first_frame_at (once); attached and detached signal the session's RemoteDesktop workflow (detached starts the reconnect window before vnc_stop); closed (with a reason) and error (with a code) stop it. The in-process gateway applies the same events without the HTTP hop.").
			Errors(cairn.ECodeNotFound, vnc.ECodeSessionEnded, ECodeTemporalUnavailable, cairn.ECodeUnavailable), "Report a remote desktop session event"},
		{"POST", gateway.PathCredential, AuthInternal, jsonAction(s, http.StatusOK, false, a.gatewayCredential).
			Summary("A gateway process asks for a live session's VNC credential sealed to its one-time public key (vnc_credential_request through the command path): the Engine relays the sealed answer and never sees the password.").
			Errors(cairn.ECodeNotFound, vnc.ECodeSessionEnded, vnc.ECodeAuthFailed, cairn.ECodeAgentSocketMissing, ECodeTemporalUnavailable, cairn.ECodeUnavailable),
			"Get a live session's sealed VNC credential (gateway)"},
		// Once the socket is open, failures close it with a reason.
		{"GET", "/api/vnc/ws/{id}", AuthToken, raw(a.browserSocket).Stream(http.StatusSwitchingProtocols, "").
			Query(queryString("token", "the one-time browser token from establishing the session")).
			Errors(vnc.ECodeTokenInvalid), "Attach the browser to a remote desktop (WebSocket, RFB)"},
	}
}

// ---- the agent's ensure ----

func (a *vncAPI) ensure(r *http.Request, req proto.VNCEnsureRequest) (proto.VNCEnsureResponse, error) {
	id := *deviceFrom(r.Context())
	var v cairn.Validation
	if req.Role != nil && req.Role.Key != proto.RoleKeyVNC {
		v.Add("role.key", "must be "+proto.RoleKeyVNC)
	}
	if req.Port < 0 || req.Port > 65535 {
		v.Add("port", "must be a TCP port")
	}
	if req.ListenAddress != "" && net.ParseIP(req.ListenAddress) == nil {
		v.Add("listen_address", "must be an IP address")
	}
	if len(req.Error) > 2000 {
		v.Add("error", "must be at most 2000 characters")
	}
	if err := v.Err(); err != nil {
		return proto.VNCEnsureResponse{}, err
	}
	if req.Role != nil {
		if err := devices.CheckRole("role", *req.Role); err != nil {
			return proto.VNCEnsureResponse{}, err
		}
		if err := a.Devices.ReportRole(r.Context(), string(id.GUID), "role", *req.Role); err != nil {
			return proto.VNCEnsureResponse{}, err
		}
	}
	return proto.VNCEnsureResponse{EngineIP: a.Tunnels.EngineIP().String(), Port: proto.VNCPort}, nil
}

// ---- establish ----

type vncEstablishReq struct {
	GUID           cairn.DeviceGUID `json:"guid"`
	Hostname       string           `json:"hostname"`
	OperationToken string           `json:"operation_token"`
	// Protocol is vnc (omitted: vnc) or rdp.
	Protocol string `json:"protocol"`
	// RDP credentials (protocol rdp): a stored credential by ID, or manual
	// ones held in the Engine's memory for the session only.
	CredentialID *int64 `json:"credential_id"`
	RDPUsername  string `json:"rdp_username"`
	RDPPassword  string `json:"rdp_password"`
	RDPDomain    string `json:"rdp_domain"`
	// Width, Height and DPI are the RDP session's display (default
	// 1280x800; the RDP bridge's screen).
	Width  *int `json:"width"`
	Height *int `json:"height"`
	DPI    *int `json:"dpi"`
	// Quality is speed (default) or quality (rule 4).
	Quality string `json:"quality"`
	// Reason vnc_auth_retry follows an explicit auth failure: the agent
	// rotates its credential first (rule 7; single-flight per device).
	Reason string `json:"reason"`
	// AuthProbe runs rule 7's diagnostic password-authentication probe
	// before the token is issued (also when SERVICE_VNC_AUTH_PROBE=1);
	// VNC sessions only (an RDP login is the bridge's own check).
	AuthProbe bool `json:"auth_probe"`
}

func (q *vncEstablishReq) validate() error {
	var v cairn.Validation
	deviceRef{GUID: q.GUID, Hostname: q.Hostname}.check(&v, map[string]bool{"operation_token": q.OperationToken != ""})
	if len(q.OperationToken) > 256 {
		v.Add("operation_token", "is not a token this Engine issued")
	}
	switch q.Protocol {
	case "", vnc.ProtocolVNC, "rdp":
	default:
		v.Add("protocol", "must be vnc or rdp")
	}
	switch q.Quality {
	case "", vnc.QualitySpeed, vnc.QualityQuality:
	default:
		v.Add("quality", "must be speed or quality")
	}
	if q.Reason != "" && q.Reason != vnc.ReasonAuthRetry {
		v.Add("reason", "must be vnc_auth_retry or absent")
	}
	q.validateRDP(&v)
	return v.Err()
}

// validateRDP checks the RDP fields: only with protocol rdp, which needs
// a credential_id or rdp_username and rdp_password (not both).
func (q *vncEstablishReq) validateRDP(v *cairn.Validation) {
	manual := q.RDPUsername != "" || q.RDPPassword != "" || q.RDPDomain != ""
	bounded := func(field string, p *int, lo, hi int) {
		if p != nil && (*p < lo || *p > hi) {
			v.Add(field, fmt.Sprintf("must be from %d to %d", lo, hi))
		}
	}
	bounded("width", q.Width, rdp.MinWidth, rdp.MaxWidth)
	bounded("height", q.Height, rdp.MinHeight, rdp.MaxHeight)
	bounded("dpi", q.DPI, rdp.MinDPI, rdp.MaxDPI)
	if q.Protocol != rdp.Protocol {
		for field, set := range map[string]bool{"credential_id": q.CredentialID != nil, "rdp_username": q.RDPUsername != "",
			"rdp_password": q.RDPPassword != "", "rdp_domain": q.RDPDomain != "", "width": q.Width != nil, "height": q.Height != nil,
			"dpi": q.DPI != nil} {
			if set {
				v.Add(field, "is for protocol rdp only")
			}
		}
		return
	}
	if q.Reason != "" {
		v.Add("reason", "is for protocol vnc only")
	}
	switch {
	case q.CredentialID != nil && manual:
		v.Add("credential_id", "send a credential_id or rdp_username and rdp_password, not both")
	case q.CredentialID != nil:
		if *q.CredentialID <= 0 {
			v.Add("credential_id", "must be a positive credential ID")
		}
	case !manual:
		v.Add("credential_id", "an RDP session needs a credential_id or rdp_username and rdp_password")
	default:
		for _, f := range []struct {
			field, val string
			max        int
			required   bool
		}{{"rdp_username", q.RDPUsername, 256, true}, {"rdp_password", q.RDPPassword, 256, true}, {"rdp_domain", q.RDPDomain, 255, false}} {
			switch {
			case f.required && strings.TrimSpace(f.val) == "":
				v.Add(f.field, "is required with manual credentials")
			case len(f.val) > f.max:
				v.Add(f.field, fmt.Sprintf("must be at most %d characters", f.max))
			case strings.ContainsFunc(f.val, unicode.IsControl):
				v.Add(f.field, "must not contain control characters")
			}
		}
	}
}

type vncEstablishResp struct {
	SessionID string           `json:"session_id"`
	Token     string           `json:"token"`
	WSURL     string           `json:"ws_url"`
	ExpiresAt time.Time        `json:"expires_at"`
	GUID      cairn.DeviceGUID `json:"guid"`
	Hostname  string           `json:"hostname"`
	Protocol  string           `json:"protocol"`
	Quality   string           `json:"quality"`
	// DisplayTopology and DisplayVirtualBounds are the agent's (rule 9:
	// the browser crops one full framebuffer per display).
	DisplayTopology      []proto.Monitor `json:"display_topology"`
	DisplayVirtualBounds string          `json:"display_virtual_bounds"`
}

func (a *vncAPI) target(ctx context.Context, req vncEstablishReq) (devices.OperationTarget, error) {
	p := principal(ctx)
	scope := p.SiteScope()
	switch {
	case req.OperationToken != "":
		guid, err := a.shell.svc.RedeemOpToken(ctx, shells.CapDesktop, req.OperationToken, p.Username)
		if err != nil {
			return devices.OperationTarget{}, err
		}
		return a.Devices.OperationTargetByGUID(ctx, scope, cairn.DeviceGUID(guid))
	case req.GUID != "":
		return a.Devices.OperationTargetByGUID(ctx, scope, req.GUID)
	default:
		return a.Devices.OperationTarget(ctx, scope, req.Hostname)
	}
}

func (a *vncAPI) establish(r *http.Request, req vncEstablishReq) (vncEstablishResp, error) {
	ctx, p := r.Context(), principal(r.Context())
	isRDP := req.Protocol == rdp.Protocol
	if isRDP && a.RDP == nil {
		return vncEstablishResp{}, cairn.Errorf(shells.ECodeNotImplemented, "this Engine serves no RDP sessions")
	}
	t, err := a.target(ctx, req)
	if err != nil {
		return vncEstablishResp{}, err
	}
	need, protocol := proto.CapVNC, vnc.ProtocolVNC
	if isRDP {
		need, protocol = proto.CapRDP, rdp.Protocol
	}
	if err := t.Require(need); err != nil {
		return vncEstablishResp{}, err
	}
	if !t.SocketLive {
		return vncEstablishResp{}, socketMissing(t.Hostname)
	}
	in := workflows.DesktopInput{Target: t, Actor: p.Username, Config: a.VNC.Config()}
	var manual *rdp.Credentials
	if isRDP {
		if in.RDP, manual, err = a.rdpSession(r, t, req); err != nil {
			return vncEstablishResp{}, err
		}
		in.Protocol = rdp.Protocol
	}
	quality := req.Quality
	if quality == "" {
		quality = vnc.QualitySpeed
	}
	if in.RDP != nil {
		in.RDP.Quality = quality
	}
	sess, err := a.VNC.Create(ctx, t, p.Username, protocol, quality, req.Reason)
	if err != nil {
		return vncEstablishResp{}, err
	}
	in.SessionID = sess.ID
	if e := auditFrom(r); e != nil {
		e.Target = "hostname=" + t.Hostname + " session=" + sess.ID
	}
	if manual != nil {
		// In this process's memory only, until the session's bridge takes
		// them (or the session ends).
		a.RDP.HoldManual(sess.ID, *manual)
		defer func() {
			if err != nil {
				a.RDP.DropManual(sess.ID)
			}
		}()
	}
	cfg := in.Config
	if err = a.Starter.Start(ctx, in); err != nil {
		_, _, _ = a.VNC.End(context.WithoutCancel(ctx), nil, sess.ID, "failed", cairn.ErrorCode(err), "the session's workflow did not start")
		return vncEstablishResp{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.EstablishDeadline+30*time.Second)
	defer cancel()
	st, err := a.Starter.AwaitReady(wctx, sess.ID)
	if err != nil {
		return vncEstablishResp{}, err
	}
	if st.Phase != workflows.DesktopPhaseReady {
		ce := cairn.Errorf(vnc.ECodeSessionEnded, "the session was closed (%s) before it was established", st.EndReason)
		if st.ErrorCode != "" {
			ce = cairn.Errorf(st.ErrorCode, "%s", st.Error)
			ce.Probe = st.Probe
		}
		err = ce
		return vncEstablishResp{}, ce
	}
	if (req.AuthProbe || cfg.AuthProbe) && !isRDP {
		if err := a.authProbe(ctx, t, p.Username, sess); err != nil {
			_ = a.Starter.Signal(context.WithoutCancel(ctx), sess.ID, workflows.SignalDesktopStop, "failed:"+cairn.ErrorCode(err))
			return vncEstablishResp{}, err
		}
	}
	tok, exp, err := a.VNC.IssueToken(ctx, sess.ID)
	if err != nil {
		return vncEstablishResp{}, err
	}
	out := vncEstablishResp{SessionID: sess.ID, Token: tok, WSURL: "/api/vnc/ws/" + sess.ID + "?token=" + url.QueryEscape(tok),
		ExpiresAt: exp.UTC(), GUID: t.GUID, Hostname: t.Hostname, Protocol: protocol, Quality: quality,
		DisplayTopology: []proto.Monitor{}}
	if in.RDP != nil {
		// The bridge's one screen.
		out.DisplayTopology = []proto.Monitor{{Name: "rdp", Width: in.RDP.Width, Height: in.RDP.Height, Primary: true}}
		out.DisplayVirtualBounds = fmt.Sprintf("%dx%d+0+0", in.RDP.Width, in.RDP.Height)
		return out, nil
	}
	if st.Started != nil {
		if st.Started.DisplayTopology != nil {
			out.DisplayTopology = st.Started.DisplayTopology
		}
		out.DisplayVirtualBounds = st.Started.DisplayVirtualBounds
	}
	return out, nil
}

// authProbe is rule 7's diagnostic: the gateway's authentication with
// the agent's sealed credential, through the tunnel, before any token.
func (a *vncAPI) authProbe(ctx context.Context, t devices.OperationTarget, operator string, sess vnc.Session) error {
	if a.VNCArea.Server == nil {
		return cairn.Errorf(tunnels.ECodeUnavailable, "this process runs no remote desktop gateway")
	}
	rotate := sess.Reason == vnc.ReasonAuthRetry
	g := &vnc.Gateway{Config: a.VNC.Config(), Rotate: rotate,
		Dial: func(ctx context.Context) (net.Conn, error) {
			return a.VNCArea.Server.Dial(ctx, sess.GUID, proto.VNCPort)
		},
		Credential: func(ctx context.Context, pub string) (string, error) {
			return a.credential(ctx, t, operator, sess.ID, pub, rotate)
		}}
	return g.AuthProbe(ctx)
}

// ---- disconnect, sessions, viewers ----

type vncSessionReq struct {
	SessionID string `json:"session_id"`
}

func (q *vncSessionReq) validate() error {
	if _, err := uuid.Parse(q.SessionID); err != nil {
		return cairn.Invalid("session_id", "must be a session ID establish answered")
	}
	return nil
}

type vncSessionJSON struct {
	vnc.Session
	// Establishment is the RemoteDesktop workflow's state (null when it
	// cannot be read).
	Establishment *workflows.DesktopStatus `json:"establishment"`
}

func (a *vncAPI) disconnect(r *http.Request, req vncSessionReq) (vnc.Session, error) {
	ctx := r.Context()
	sess, err := a.VNC.Get(ctx, principal(ctx).SiteScope(), req.SessionID)
	if err != nil {
		return vnc.Session{}, err
	}
	if e := auditFrom(r); e != nil {
		e.Target = "hostname=" + sess.Hostname + " session=" + sess.ID
	}
	if sess.Status == vnc.StatusEnded {
		return sess, nil
	}
	if err := a.Starter.Signal(ctx, sess.ID, workflows.SignalDesktopStop, "stopped"); err != nil {
		return vnc.Session{}, err
	}
	return sess, nil
}

type vncHandoffResp struct {
	vncEstablishResp
	// PreviousOperator is who owned the session before; Handoffs how
	// many times it was taken over, this one included.
	PreviousOperator string `json:"previous_operator"`
	Handoffs         int32  `json:"handoffs"`
}

// handoff gives the session to the caller: a second operator, or the
// owner's second browser. The previous browser's relay ends (a normal
// close: the workflow's reconnect window covers the switch), then the
// caller gets the session's new one-time token.
func (a *vncAPI) handoff(r *http.Request, req vncSessionReq) (vncHandoffResp, error) {
	ctx, p := r.Context(), principal(r.Context())
	sess, err := a.VNC.Get(ctx, p.SiteScope(), req.SessionID)
	if err != nil {
		return vncHandoffResp{}, err
	}
	if e := auditFrom(r); e != nil {
		e.Target = "hostname=" + sess.Hostname + " session=" + sess.ID + " from=" + sess.Operator
	}
	t, err := a.Devices.OperationTargetByGUID(ctx, p.SiteScope(), sess.GUID)
	if err != nil {
		return vncHandoffResp{}, err
	}
	if err := t.Require(proto.CapVNC); err != nil {
		return vncHandoffResp{}, err
	}
	taken, tok, exp, err := a.VNC.Handoff(ctx, sess, p.Username)
	if err != nil {
		return vncHandoffResp{}, err
	}
	out := vncHandoffResp{PreviousOperator: taken.HandedOffFrom, Handoffs: taken.Handoffs, vncEstablishResp: vncEstablishResp{SessionID: sess.ID, Token: tok,
		WSURL: "/api/vnc/ws/" + sess.ID + "?token=" + url.QueryEscape(tok), ExpiresAt: exp.UTC(), GUID: sess.GUID,
		Hostname: sess.Hostname, Protocol: taken.Protocol, Quality: taken.Quality, DisplayTopology: []proto.Monitor{}}}
	// The taker's display topology as it is now (vnc_refresh: monitors
	// may have changed since vnc_start); the establishment's when the
	// agent cannot say.
	started, rerr := a.refresh(ctx, t, p.Username, sess.ID)
	if rerr != nil {
		a.ctxLog(ctx).Warn("vnc_refresh for a handoff", "session", sess.ID, "err", rerr)
		if a.Starter.Client != nil {
			if st, err := a.Starter.State(ctx, sess.ID); err == nil && st != nil {
				started = st.Started
			}
		}
	}
	if started != nil {
		if started.DisplayTopology != nil {
			out.DisplayTopology = started.DisplayTopology
		}
		out.DisplayVirtualBounds = started.DisplayVirtualBounds
	}
	return out, nil
}

// refresh asks the agent to read its display topology again
// (vnc_refresh through the command path), keeping its server.
func (a *vncAPI) refresh(ctx context.Context, t devices.OperationTarget, operator, sessionID string) (*proto.VNCStarted, error) {
	payload, err := json.Marshal(proto.VNCRefresh{SessionID: sessionID})
	if err != nil {
		return nil, err
	}
	res, err := a.Operations.Run(ctx, workflows.OperationInput{OperationID: cairn.OperationID(sessionID + ":refresh:" + uuid.NewString()[:8]),
		Target: t, Type: proto.EventVNCRefresh, Payload: payload, Kind: workflows.JobKindRemoteDesktop,
		Summary: "Refresh the VNC display topology", Actor: operator, Meta: map[string]any{"session_id": sessionID},
		Timeout: a.VNC.Config().StartReadyWait})
	if err != nil {
		return nil, err
	}
	var st proto.VNCStarted
	if err := json.Unmarshal(res.Payload, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

type vncSessionEventReq struct {
	vnc.Event
}

func (q *vncSessionEventReq) validate() error {
	if _, err := uuid.Parse(q.SessionID); err != nil {
		return cairn.Invalid("session_id", "must be a remote desktop session ID")
	}
	return q.Event.Validate()
}

// sessionEvent records what a gateway process saw of a session; the
// signing key's ID is the audit trail's actor.
func (a *vncAPI) sessionEvent(r *http.Request, req vncSessionEventReq) (vnc.Session, error) {
	if e := auditFrom(r); e != nil {
		e.Target = "session=" + req.SessionID + " event=" + req.Event.Event
	}
	return a.applyEvent(r.Context(), req.Event)
}

// applyEvent turns a gateway's session event into the session's row or
// its workflow's signal: the one path of both gateways.
func (a *vncAPI) applyEvent(ctx context.Context, e vnc.Event) (vnc.Session, error) {
	sess, err := a.VNC.Get(ctx, cairn.AllSites, e.SessionID)
	if err != nil {
		return vnc.Session{}, err
	}
	if sess.Status == vnc.StatusEnded {
		return vnc.Session{}, cairn.Errorf(vnc.ECodeSessionEnded, "the remote desktop session has ended")
	}
	switch e.Event {
	case vnc.EventFirstFrame:
		at := a.Now()
		if e.At != nil {
			at = *e.At
		}
		err = a.VNC.FirstFrame(ctx, sess.ID, at)
	case vnc.EventAttached:
		err = a.Starter.Signal(ctx, sess.ID, workflows.SignalDesktopAttached, nil)
	case vnc.EventDetached:
		err = a.Starter.Signal(ctx, sess.ID, workflows.SignalDesktopDetached, nil)
	case vnc.EventClosed:
		reason := e.Reason
		if reason == "" {
			reason = "stopped"
		}
		err = a.Starter.Signal(ctx, sess.ID, workflows.SignalDesktopStop, reason)
	case vnc.EventError:
		err = a.Starter.Signal(ctx, sess.ID, workflows.SignalDesktopStop, "failed:"+e.Code)
	}
	if err != nil {
		return vnc.Session{}, err
	}
	return a.VNC.Get(ctx, cairn.AllSites, sess.ID)
}

// inProcessEvents is the in-process gateway's vnc.EventSink.
type inProcessEvents struct{ a *vncAPI }

func (s inProcessEvents) SessionEvent(ctx context.Context, e vnc.Event) error {
	_, err := s.a.applyEvent(ctx, e)
	if err != nil {
		s.a.Log.Warn("remote desktop session event", "session", e.SessionID, "event", e.Event, "err", err)
	}
	return err
}

type vncCredentialReq struct {
	gateway.CredentialRequest
}

func (q *vncCredentialReq) validate() error {
	var v cairn.Validation
	if _, err := uuid.Parse(q.SessionID); err != nil {
		v.Add("session_id", "must be a remote desktop session ID")
	}
	if q.PublicKey == "" || len(q.PublicKey) > 128 {
		v.Add("public_key", "must be the gateway's one-time public key")
	}
	return v.Err()
}

// gatewayCredential hands a gateway process a live session's credential,
// sealed by the agent to the gateway's one-time key.
func (a *vncAPI) gatewayCredential(r *http.Request, req vncCredentialReq) (gateway.CredentialResponse, error) {
	ctx := r.Context()
	sess, err := a.VNC.Get(ctx, cairn.AllSites, req.SessionID)
	if err != nil {
		return gateway.CredentialResponse{}, err
	}
	if e := auditFrom(r); e != nil {
		e.Target = "hostname=" + sess.Hostname + " session=" + sess.ID
	}
	if sess.Status != vnc.StatusLive {
		return gateway.CredentialResponse{}, cairn.Errorf(vnc.ECodeSessionEnded, "the remote desktop session is not live (its browser has not attached, or it ended)")
	}
	t, err := a.Devices.OperationTargetByGUID(ctx, cairn.AllSites, sess.GUID)
	if err != nil {
		return gateway.CredentialResponse{}, err
	}
	if err := t.Require(proto.CapVNC); err != nil {
		return gateway.CredentialResponse{}, err
	}
	sealed, err := a.credential(ctx, t, sess.Operator, sess.ID, req.PublicKey, sess.Reason == vnc.ReasonAuthRetry)
	return gateway.CredentialResponse{Sealed: sealed}, err
}

func (a *vncAPI) session(r *http.Request) (vncSessionJSON, error) {
	ctx := r.Context()
	sess, err := a.VNC.Get(ctx, principal(ctx).SiteScope(), pathParam(r, "id"))
	if err != nil {
		return vncSessionJSON{}, err
	}
	out := vncSessionJSON{Session: sess}
	if a.Starter.Client != nil {
		st, err := a.Starter.State(ctx, sess.ID)
		if err != nil {
			return out, err
		}
		out.Establishment = st
	}
	return out, nil
}

type vncSessionsJSON struct {
	Sessions []vnc.Session `json:"sessions"`
}

func (a *vncAPI) sessions(r *http.Request) (vncSessionsJSON, error) {
	list, err := a.VNC.Active(r.Context(), principal(r.Context()).SiteScope())
	return vncSessionsJSON{Sessions: list}, err
}

type vncViewersJSON struct {
	// Available: this replica can relay sessions now (it holds the
	// Engine's WireGuard); Reason says why not.
	Available bool         `json:"available"`
	Reason    string       `json:"reason,omitempty"`
	Protocols []string     `json:"protocols"`
	Viewers   []vnc.Viewer `json:"viewers"`
}

func (a *vncAPI) viewers(r *http.Request) (vncViewersJSON, error) {
	out := vncViewersJSON{Protocols: []string{vnc.ProtocolVNC}}
	if a.RDP != nil && len(rdp.Missing()) == 0 {
		out.Protocols = append(out.Protocols, rdp.Protocol)
	}
	if a.VNCArea.Server == nil {
		out.Reason = "this process runs no remote desktop gateway"
	} else {
		out.Available, out.Reason = a.VNCArea.Server.Available(r.Context())
	}
	v, err := a.VNC.Viewers(r.Context(), principal(r.Context()).SiteScope())
	out.Viewers = v
	return out, err
}

// ---- the browser's socket ----

func (a *vncAPI) browserSocket(w http.ResponseWriter, r *http.Request) {
	ctx, p := r.Context(), principal(r.Context())
	switch {
	case p.ReadOnly():
		writeError(w, r, a.Log, cairn.Errorf(cairn.ECodeForbidden, "this API token is read-only"))
		return
	case !isUpgrade(r):
		writeError(w, r, a.Log, cairn.Invalid("upgrade", "this address takes a WebSocket upgrade"))
		return
	case !sameOrigin(r):
		writeError(w, r, a.Log, cairn.Errorf(cairn.ECodeForbidden, "remote desktop sockets are accepted from the console's own origin only"))
		return
	case a.VNCArea.Server == nil:
		writeError(w, r, a.Log, cairn.Errorf(tunnels.ECodeUnavailable, "this process runs no remote desktop gateway"))
		return
	}
	sess, err := a.VNC.Redeem(ctx, pathParam(r, "id"), r.URL.Query().Get("token"), p.Username)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"binary"}})
	if err != nil {
		_ = a.Starter.Signal(context.WithoutCancel(ctx), sess.ID, workflows.SignalDesktopStop, "browser_closed")
		return
	}
	conn.SetReadLimit(1 << 20)
	bg := context.WithoutCancel(ctx)
	isRDP := sess.Protocol == rdp.Protocol
	// A handoff ends this relay (rctx) as if the browser had left; the
	// release, deferred first so it runs last, tells the handoff the
	// workflow has heard the detach.
	rctx, cancelRelay := context.WithCancel(ctx)
	defer cancelRelay()
	defer a.VNC.Relaying(sess.ID, cancelRelay)()
	// An RDP session's bridge runs in the Engine process that started it
	// (its xfreerdp dials the device through the tunnels from here), so
	// only VNC is relayed to a gateway process.
	if a.Gateway != nil && !isRDP {
		a.relayToGateway(ctx, rctx, conn, sess)
		return
	}
	sink := inProcessEvents{a}
	t, err := a.Devices.OperationTargetByGUID(ctx, p.SiteScope(), sess.GUID)
	if err == nil && !isRDP {
		err = t.Require(proto.CapVNC)
	}
	var reason string
	switch {
	case err != nil:
		vnc.ReportError(bg, sink, sess.ID, err)
	case isRDP:
		// The session's bridge in this process: its x11vnc on loopback,
		// with its one-time password (the RDP credentials stay with
		// xfreerdp).
		var b *rdp.Bridge
		if a.RDP != nil {
			b = a.RDP.Bridge(sess.ID)
		}
		if b == nil {
			err = cairn.Errorf(vnc.ECodeSessionEnded, "the session's RDP bridge is not running in this Engine process")
			vnc.ReportError(bg, sink, sess.ID, err)
			break
		}
		g := &vnc.Gateway{Config: a.VNC.Config(), Dial: b.Dial,
			Password: func(context.Context) (string, error) { return b.Password(), nil }}
		reason, err = g.Attach(rctx, sess.ID, websocket.NetConn(ctx, conn, websocket.MessageBinary), sink)
	default:
		g := &vnc.Gateway{Config: a.VNC.Config(), Rotate: sess.Reason == vnc.ReasonAuthRetry,
			Dial: func(ctx context.Context) (net.Conn, error) {
				return a.VNCArea.Server.Dial(ctx, sess.GUID, proto.VNCPort)
			},
			Credential: func(ctx context.Context, pub string) (string, error) {
				return a.credential(ctx, t, p.Username, sess.ID, pub, sess.Reason == vnc.ReasonAuthRetry)
			}}
		// Attach reports attached, first_frame and detached (or error):
		// detached keeps the server for the reconnect window
		// (SERVICE_VNC_STOP_DEBOUNCE_SECONDS) before vnc_stop; a handoff
		// (rctx ended) is a detach.
		reason, err = g.Attach(rctx, sess.ID, websocket.NetConn(ctx, conn, websocket.MessageBinary), sink)
	}
	if err != nil {
		msg := "the remote desktop could not be opened"
		var ce *cairn.Error
		if errors.As(err, &ce) {
			msg = ce.Code + ": " + ce.Message
		} else {
			a.Log.Error("remote desktop session", "session", sess.ID, "err", err)
		}
		_ = conn.Close(websocket.StatusPolicyViolation, closeText(msg))
		return
	}
	if rctx.Err() != nil && ctx.Err() == nil {
		reason = "handed_off"
	}
	_ = conn.Close(websocket.StatusNormalClosure, reason)
}

// relayToGateway joins the browser's socket to the gateway process's
// (same origin for the browser; the gateway's listener is never public):
// the gateway authenticates to the agent, speaks RFB to the browser and
// reports the session's events. Only when it cannot be reached does the
// Engine end the session itself.
func (a *vncAPI) relayToGateway(ctx, relay context.Context, browser *websocket.Conn, sess vnc.Session) {
	bg := context.WithoutCancel(ctx)
	up, err := a.Gateway.OpenDesktop(ctx, sess.ID, sess.GUID, sess.Reason == vnc.ReasonAuthRetry)
	if err != nil {
		_ = a.Starter.Signal(bg, sess.ID, workflows.SignalDesktopStop, "failed:"+cairn.ErrorCode(err))
		var ce *cairn.Error
		msg := "the remote desktop gateway could not be reached"
		if errors.As(err, &ce) {
			msg = ce.Code + ": " + ce.Message
		}
		_ = browser.Close(websocket.StatusTryAgainLater, closeText(msg))
		return
	}
	type end struct {
		fromGateway bool
		err         error
	}
	done := make(chan end, 2)
	pump := func(dst, src *websocket.Conn, fromGateway bool) {
		for {
			typ, data, err := src.Read(ctx)
			if err != nil {
				done <- end{fromGateway, err}
				return
			}
			if err := dst.Write(ctx, typ, data); err != nil {
				done <- end{!fromGateway, err}
				return
			}
		}
	}
	go pump(browser, up, true)
	go pump(up, browser, false)
	var e end
	select {
	case e = <-done:
	case <-relay.Done():
		// Handed off (or the request ended): the gateway sees its
		// browser leave and reports detached, which the handoff waits
		// for through the release of this relay.
		_ = up.Close(websocket.StatusNormalClosure, "handed_off")
		_ = browser.Close(websocket.StatusNormalClosure, "handed_off")
		return
	}
	if e.fromGateway {
		// The gateway's close (its reason, or the error's code) is the
		// browser's.
		status, reason := websocket.StatusNormalClosure, ""
		var ce websocket.CloseError
		if errors.As(e.err, &ce) {
			status, reason = ce.Code, ce.Reason
		} else {
			// The gateway's side dropped without a close (it died): it
			// could not report the end, so the Engine does, as detached
			// (the reconnect window, then vnc_stop).
			status, reason = websocket.StatusGoingAway, "the remote desktop gateway went away"
			_ = a.Starter.Signal(bg, sess.ID, workflows.SignalDesktopDetached, nil)
		}
		_ = browser.Close(status, reason)
		up.CloseNow()
		return
	}
	_ = up.Close(websocket.StatusNormalClosure, "browser_closed")
	browser.CloseNow()
}

// closeText bounds a close frame's reason (123 bytes).
func closeText(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}

// credential asks the agent for its password sealed to pub
// (vnc_credential_request through the command path): only for this live
// session, and only the gateway's private key opens the answer.
func (a *vncAPI) credential(ctx context.Context, t devices.OperationTarget, operator, sessionID, pub string, rotate bool) (string, error) {
	payload, err := json.Marshal(proto.VNCCredentialRequest{SessionID: sessionID, PublicKey: pub, Rotate: rotate})
	if err != nil {
		return "", err
	}
	res, err := a.Operations.Run(ctx, workflows.OperationInput{OperationID: cairn.OperationID(sessionID + ":credential:" + uuid.NewString()[:8]),
		Target: t, Type: proto.EventVNCCredentialRequest, Payload: payload, Kind: workflows.JobKindRemoteDesktop,
		Summary: "Hand the VNC credential to the gateway (sealed)", Actor: operator, Meta: map[string]any{"session_id": sessionID},
		Timeout: a.VNC.Config().CredentialWait})
	if err != nil {
		return "", err
	}
	var c proto.VNCCredential
	if err := json.Unmarshal(res.Payload, &c); err != nil || c.Sealed == "" {
		return "", cairn.Errorf(vnc.ECodeAuthFailed, "the agent's credential answer was malformed")
	}
	return c.Sealed, nil
}

// rdpSession checks an RDP establish's credential before anything starts
// and returns the bridge's parameters (no secret: a stored credential by
// ID) and the manual credentials, if any. A stored credential must be
// visible to the operator (else validation_failed: no such credential),
// of the device's site or global, Windows or WinRM, Machine or Domain,
// with a readable password (else rdp_credential_invalid); the bridge's
// activity checks it again before decrypting (credentials.Reveal).
func (a *vncAPI) rdpSession(r *http.Request, t devices.OperationTarget, req vncEstablishReq) (*workflows.DesktopRDP, *rdp.Credentials, error) {
	if m := rdp.Missing(); len(m) > 0 {
		return nil, nil, cairn.Errorf(rdp.ECodeBridgeUnavailable, "this Engine host lacks %s for the RDP bridge (Debian xvfb, freerdp2-x11, x11vnc, x11-utils)",
			strings.Join(m, ", "))
	}
	out := &workflows.DesktopRDP{Width: rdp.DefaultWidth, Height: rdp.DefaultHeight}
	if req.Width != nil {
		out.Width = *req.Width
	}
	if req.Height != nil {
		out.Height = *req.Height
	}
	if req.DPI != nil {
		out.DPI = *req.DPI
	}
	if req.CredentialID == nil {
		return out, &rdp.Credentials{Username: req.RDPUsername, Domain: req.RDPDomain, Password: req.RDPPassword}, nil
	}
	c, err := a.Credentials.Get(r.Context(), credentialScope(r), *req.CredentialID)
	if err != nil {
		if cairn.ErrorCode(err) == cairn.ECodeNotFound {
			return nil, nil, cairn.Invalid("credential_id", "no such credential in your sites")
		}
		return nil, nil, err
	}
	switch {
	case c.SiteID != nil && *c.SiteID != t.SiteID:
		return nil, nil, cairn.Errorf(rdp.ECodeCredentialInvalid, "credential %d belongs to another site than %s", c.ID, t.Hostname)
	case c.ConnectionType != credentials.ConnWindows && c.ConnectionType != credentials.ConnWinRM:
		return nil, nil, cairn.Errorf(rdp.ECodeCredentialInvalid, "credential %d is not a Windows or WinRM credential", c.ID)
	case c.CredentialType != credentials.TypeMachine && c.CredentialType != credentials.TypeDomain:
		return nil, nil, cairn.Errorf(rdp.ECodeCredentialInvalid, "credential %d is not a Machine or Domain credential", c.ID)
	case !c.HasPassword || strings.TrimSpace(c.Username) == "":
		return nil, nil, cairn.Errorf(rdp.ECodeCredentialInvalid, "credential %d has no username or password", c.ID)
	case c.SecretStatus != "" && c.SecretStatus != credentials.StatusOK:
		return nil, nil, cairn.Errorf(rdp.ECodeCredentialInvalid, "credential %d's password cannot be read (%s); set it again", c.ID, c.SecretStatus)
	}
	out.CredentialID = c.ID
	return out, nil, nil
}
