package api

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
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
	// Server is this replica's end of the tunnels: the gateway dials the
	// agent's server through it (nil: this process has no gateway).
	Server  *tunnels.Server
	Starter workflowclient.DesktopStarter
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
	proto.CodeVNCNotReady}

func (d VNCArea) routes(s *Server) []Route {
	a := &vncAPI{Server: s, VNCArea: d}
	return []Route{
		{"POST", proto.PathVNCEnsure, AuthDevice, jsonAction(s, http.StatusOK, false, a.ensure).
			Summary("Advertise the VNC role's readiness and store its system:vnc row; answers the firewall scope (the Engine's tunnel /32). Never carries the VNC password."),
			"Agent: ensure the VNC role"},
		{"POST", "/api/vnc/establish", AuthToken, jsonAction(s, http.StatusOK, false, a.establish).
			Summary("Establish a remote desktop session (protocol vnc; rdp is not built yet). Runs the RemoteDesktop workflow on the device's site queue: tunnel readiness, vnc_start, the RFB banner probe and security preflight, within SERVICE_VNC_ESTABLISH_DEADLINE_SECONDS; then answers the browser's one-time token and socket URL. The VNC password never reaches the browser.").
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
			Summary("A remote desktop gateway reports a session event (HMAC-signed, Internal class): first_frame records first_frame_at (once); attached and detached signal the session's RemoteDesktop workflow as the in-process gateway does (detached starts the reconnect window before vnc_stop).").
			Errors(cairn.ECodeNotFound, vnc.ECodeSessionEnded, ECodeTemporalUnavailable, cairn.ECodeUnavailable), "Report a remote desktop session event"},
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
	// Protocol is vnc (omitted: vnc); rdp is not built yet.
	Protocol string `json:"protocol"`
	// Quality is speed (default) or quality (rule 4).
	Quality string `json:"quality"`
	// Reason vnc_auth_retry follows an explicit auth failure: the agent
	// rotates its credential first (rule 7; single-flight per device).
	Reason string `json:"reason"`
	// AuthProbe runs rule 7's diagnostic password-authentication probe
	// before the token is issued (also when SERVICE_VNC_AUTH_PROBE=1).
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
	return v.Err()
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
	if req.Protocol == "rdp" {
		return vncEstablishResp{}, cairn.Errorf(shells.ECodeNotImplemented, "RDP sessions are not available yet; use protocol vnc")
	}
	t, err := a.target(ctx, req)
	if err != nil {
		return vncEstablishResp{}, err
	}
	if err := t.Require(proto.CapVNC); err != nil {
		return vncEstablishResp{}, err
	}
	if !t.SocketLive {
		return vncEstablishResp{}, socketMissing(t.Hostname)
	}
	quality := req.Quality
	if quality == "" {
		quality = vnc.QualitySpeed
	}
	sess, err := a.VNC.Create(ctx, t, p.Username, quality, req.Reason)
	if err != nil {
		return vncEstablishResp{}, err
	}
	if e := auditFrom(r); e != nil {
		e.Target = "hostname=" + t.Hostname + " session=" + sess.ID
	}
	cfg := a.VNC.Config()
	if err := a.Starter.Start(ctx, workflows.DesktopInput{SessionID: sess.ID, Target: t, Actor: p.Username, Config: cfg}); err != nil {
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
		return vncEstablishResp{}, ce
	}
	if req.AuthProbe || cfg.AuthProbe {
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
		ExpiresAt: exp.UTC(), GUID: t.GUID, Hostname: t.Hostname, Protocol: vnc.ProtocolVNC, Quality: quality,
		DisplayTopology: []proto.Monitor{}}
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

// Session events a gateway reports (SPEC "Remote desktop rules" 8).
const (
	vncEventFirstFrame = "first_frame"
	vncEventAttached   = "attached"
	vncEventDetached   = "detached"
)

type vncSessionEventReq struct {
	SessionID string `json:"session_id"`
	// Event is first_frame, attached or detached.
	Event string `json:"event"`
	// At is when it happened (first_frame; default: now).
	At *time.Time `json:"at,omitempty"`
}

func (q *vncSessionEventReq) validate() error {
	if _, err := uuid.Parse(q.SessionID); err != nil {
		return cairn.Invalid("session_id", "must be a remote desktop session ID")
	}
	switch q.Event {
	case vncEventFirstFrame, vncEventAttached, vncEventDetached:
		return nil
	}
	return cairn.Invalid("event", "must be first_frame, attached or detached")
}

// sessionEvent records what a gateway saw of a session; the signing
// key's ID is the audit trail's actor.
func (a *vncAPI) sessionEvent(r *http.Request, req vncSessionEventReq) (vnc.Session, error) {
	ctx := r.Context()
	sess, err := a.VNC.Get(ctx, cairn.AllSites, req.SessionID)
	if err != nil {
		return vnc.Session{}, err
	}
	if e := auditFrom(r); e != nil {
		e.Target = "hostname=" + sess.Hostname + " session=" + sess.ID + " event=" + req.Event
	}
	if sess.Status == vnc.StatusEnded {
		return vnc.Session{}, cairn.Errorf(vnc.ECodeSessionEnded, "the remote desktop session has ended")
	}
	switch req.Event {
	case vncEventFirstFrame:
		at := a.Now()
		if req.At != nil {
			at = *req.At
		}
		if err := a.VNC.FirstFrame(ctx, sess.ID, at); err != nil {
			return vnc.Session{}, err
		}
	case vncEventAttached:
		err = a.Starter.Signal(ctx, sess.ID, workflows.SignalDesktopAttached, nil)
	case vncEventDetached:
		err = a.Starter.Signal(ctx, sess.ID, workflows.SignalDesktopDetached, nil)
	}
	if err != nil {
		return vnc.Session{}, err
	}
	return a.VNC.Get(ctx, cairn.AllSites, sess.ID)
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
	switch {
	case a.VNCArea.Server == nil:
		out.Reason = "this process runs no remote desktop gateway"
	case !a.VNCArea.Server.Owner():
		out.Reason = "another Engine replica holds the WireGuard tunnels"
	default:
		out.Available = true
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
	// A handoff ends this relay (rctx) as if the browser had left; the
	// release, deferred first so it runs last, tells the handoff the
	// workflow has heard the detach.
	rctx, cancelRelay := context.WithCancel(ctx)
	defer cancelRelay()
	defer a.VNC.Relaying(sess.ID, cancelRelay)()
	_ = a.Starter.Signal(bg, sess.ID, workflows.SignalDesktopAttached, nil)
	t, err := a.Devices.OperationTargetByGUID(ctx, p.SiteScope(), sess.GUID)
	if err == nil {
		err = t.Require(proto.CapVNC)
	}
	var reason string
	if err == nil {
		g := &vnc.Gateway{Config: a.VNC.Config(), Rotate: sess.Reason == vnc.ReasonAuthRetry,
			Dial: func(ctx context.Context) (net.Conn, error) {
				return a.VNCArea.Server.Dial(ctx, sess.GUID, proto.VNCPort)
			},
			Credential: func(ctx context.Context, pub string) (string, error) {
				return a.credential(ctx, t, p.Username, sess.ID, pub, sess.Reason == vnc.ReasonAuthRetry)
			},
			FirstFrame: func(at time.Time) {
				if ferr := a.VNC.FirstFrame(bg, sess.ID, at); ferr != nil {
					a.Log.Warn("record first_frame_at", "session", sess.ID, "err", ferr)
				}
			}}
		reason, err = g.Serve(rctx, websocket.NetConn(ctx, conn, websocket.MessageBinary))
	}
	if err != nil && rctx.Err() != nil && ctx.Err() == nil {
		// Handed off while this browser's handshake was under way.
		err, reason = nil, "handed_off"
	}
	if err != nil {
		code, msg := cairn.ErrorCode(err), "the remote desktop could not be opened"
		var ce *cairn.Error
		if errors.As(err, &ce) {
			msg = ce.Code + ": " + ce.Message
		} else {
			a.Log.Error("remote desktop session", "session", sess.ID, "err", err)
		}
		_ = conn.Close(websocket.StatusPolicyViolation, closeText(msg))
		_ = a.Starter.Signal(bg, sess.ID, workflows.SignalDesktopStop, "failed:"+code)
		return
	}
	if rctx.Err() != nil && ctx.Err() == nil {
		reason = "handed_off"
	}
	_ = conn.Close(websocket.StatusNormalClosure, reason)
	// The browser left (or was handed off): the workflow keeps the server for the reconnect
	// window (SERVICE_VNC_STOP_DEBOUNCE_SECONDS) before vnc_stop.
	_ = a.Starter.Signal(bg, sess.ID, workflows.SignalDesktopDetached, nil)
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
