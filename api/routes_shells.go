package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/shells"
)

// ShellsArea are the remote shell routes.
type ShellsArea struct {
	// Shells keeps shell sessions (nil: the routes make their own).
	Shells *shells.Service
}

func (d ShellsArea) routes(s *Server) []Route { return s.shellRoutes(d.Shells) }

// Remote shell (SPEC "Remote desktop, shell, tunnel"; docs/api.md "Remote
// shell"). Establish records a pending session; the browser's socket
// (/api/shell/ws/{id}) claims it and only then is the agent asked, through
// the command path, to dial its side (/api/agent/shell/{id}); this process
// bridges the two. See docs/architecture.md "Remote shell" for why both
// sockets must reach the same process.

// shellAPI holds what the shell routes share: the session store and this
// process's table of live sessions.
type shellAPI struct {
	s       *Server
	svc     *shells.Service
	live    *shells.Registry
	replica string
}

// shellCloseGrace is how long a disconnect lets the agent end the shell
// (and report its exit) before both sockets are closed anyway.
const shellCloseGrace = 3 * time.Second

func (s *Server) shellRoutes(svc *shells.Service) []Route {
	if svc == nil {
		svc = shells.New(s.Store, s.Devices, s.Log, shells.Config{})
	}
	h := &shellAPI{s: s, svc: svc, live: shells.NewRegistry(), replica: uuid.NewString()}
	s.shell = h
	switch {
	case s.Sockets != nil:
		h.replica = s.Sockets.Replica()
	case s.Presence != nil:
		h.replica = s.Presence.ReplicaID
	}
	return []Route{
		{"POST", "/api/shell/establish", AuthToken, jsonAction(s, http.StatusOK, false, h.establish).Errors(shellTargetErrors...), "Open a remote shell"},
		{"POST", "/api/shell/disconnect", AuthToken, jsonAction(s, http.StatusOK, false, h.disconnect).Errors(cairn.ECodeNotFound), "Close a remote shell"},
		// Once the socket is open, refusals are "error" frames, not answers.
		{"GET", "/api/shell/ws/{id}", AuthToken, raw(h.browserSocket).Stream(http.StatusSwitchingProtocols, "").Query(queryString("token", "the one-time browser token from opening the session")).
			Errors(shells.ECodeTokenInvalid), "Attach the browser to a shell (WebSocket)"},
		{"GET", "/api/shell/sessions", AuthToken, getAction(s, h.list).Query(queryInteger("limit", "sessions to return"), queryString("hostname", "only this device's sessions")), "List shell sessions"},
		// What a shell showed is device content.
		{"GET", "/api/shell/sessions/{id}/transcript", AuthAdmin, s.deviceContent(raw(h.transcript).Stream(http.StatusOK, "application/x-asciicast").Errors(cairn.ECodeNotFound, cairn.ECodeConflict)), "Get a shell session's transcript"},
		{"POST", "/api/remote-ops/session", AuthToken, jsonAction(s, http.StatusOK, false, h.remoteOpsSession).Errors(append(shellTargetErrors, shells.ECodeNotImplemented, proto.CodeUnsupportedPlatform)...), "Open a remote operations session"},
		{"GET", proto.PathShellSocket + "/{id}", AuthDevice, raw(h.agentSocket).Stream(http.StatusSwitchingProtocols, "").Errors(shells.ECodeTokenInvalid, cairn.ECodeWrongWorker), "Agent: attach to a shell (WebSocket)"},
	}
}

// ---- requests ----

// deviceRef names a device by exactly one of its fields.
type deviceRef struct {
	GUID     cairn.DeviceGUID
	Hostname string
}

// check adds the problems of the reference to v; others are further
// alternatives to guid and hostname that were given (operation_token).
func (d deviceRef) check(v *cairn.Validation, others map[string]bool) {
	given := []string{}
	for _, f := range []struct {
		name string
		set  bool
	}{{"guid", d.GUID != ""}, {"hostname", d.Hostname != ""}, {"operation_token", others["operation_token"]}} {
		if f.set {
			given = append(given, f.name)
		}
	}
	names := "guid or hostname"
	if _, ok := others["operation_token"]; ok {
		names = "guid, hostname or operation_token"
	}
	switch {
	case len(given) == 0:
		v.Add("guid", "one of "+names+" is required")
	case len(given) > 1:
		for _, f := range given[1:] {
			v.Add(f, "give exactly one of "+names)
		}
	}
	if d.GUID != "" && (len(d.GUID) > 128 || strings.ContainsFunc(string(d.GUID), unicode.IsControl)) {
		v.Add("guid", "must be at most 128 characters without control characters")
	}
	if d.Hostname != "" {
		if err := devices.CheckHostname("hostname", d.Hostname); err != nil {
			v.Add("hostname", "must be at most 255 characters without control characters")
		}
	}
}

// Requests list guid and hostname themselves rather than embedding
// deviceRef: decoding errors name the field as the JSON path.
type shellEstablishReq struct {
	GUID               cairn.DeviceGUID `json:"guid"`
	Hostname           string           `json:"hostname"`
	OperationToken     string           `json:"operation_token"`
	Cols               int              `json:"cols"`
	Rows               int              `json:"rows"`
	IdleTimeoutSeconds int              `json:"idle_timeout_seconds"`
}

func (q *shellEstablishReq) ref() deviceRef { return deviceRef{GUID: q.GUID, Hostname: q.Hostname} }

func (q *shellEstablishReq) validate() error {
	var v cairn.Validation
	q.ref().check(&v, map[string]bool{"operation_token": q.OperationToken != ""})
	if len(q.OperationToken) > 256 {
		v.Add("operation_token", "is not a token this Engine issued")
	}
	if q.Cols < 0 || q.Cols > shells.MaxTermSize {
		v.Add("cols", "must be 1 to 1000 (0 or absent: 80)")
	}
	if q.Rows < 0 || q.Rows > shells.MaxTermSize {
		v.Add("rows", "must be 1 to 1000 (0 or absent: 24)")
	}
	if q.IdleTimeoutSeconds != 0 && (q.IdleTimeoutSeconds < shells.MinIdleTimeout || q.IdleTimeoutSeconds > shells.MaxIdleTimeout) {
		v.Add("idle_timeout_seconds", "must be 60 to 86400 (0 or absent: 900)")
	}
	return v.Err()
}

type shellEstablishResp struct {
	SessionID          string           `json:"session_id"`
	WSURL              string           `json:"ws_url"`
	AgentSocket        bool             `json:"agent_socket"`
	ExpiresAt          time.Time        `json:"expires_at"`
	GUID               cairn.DeviceGUID `json:"guid"`
	Hostname           string           `json:"hostname"`
	IdleTimeoutSeconds int              `json:"idle_timeout_seconds"`
}

// target finds the device of ref (or of a redeemed operation token)
// inside the operator's scope, refusing untrusted devices.
func (h *shellAPI) target(ctx context.Context, p *auth.Principal, ref deviceRef, opToken string) (devices.OperationTarget, error) {
	scope := p.SiteScope()
	switch {
	case opToken != "":
		guid, err := h.svc.RedeemOpToken(ctx, shells.CapShell, opToken, p.Username)
		if err != nil {
			return devices.OperationTarget{}, err
		}
		return h.s.Devices.OperationTargetByGUID(ctx, scope, cairn.DeviceGUID(guid))
	case ref.GUID != "":
		return h.s.Devices.OperationTargetByGUID(ctx, scope, ref.GUID)
	default:
		return h.s.Devices.OperationTarget(ctx, scope, ref.Hostname)
	}
}

// shellTargetErrors are what naming a shell's device may answer (target):
// the device unknown or out of scope, refusing operations, without a
// socket, its agent without the shell capability, or the operation token
// spent.
var shellTargetErrors = []string{cairn.ECodeNotFound, devicetrust.ECodeDeviceQuarantined, devicetrust.ECodeDeviceRevoked,
	cairn.ECodeAgentSocketMissing, cairn.ECodeAgentTooOld, shells.ECodeTokenInvalid}

func socketMissing(hostname string) error {
	return cairn.Errorf(cairn.ECodeAgentSocketMissing,
		"Agent onboarding underway: the agent of %s has no realtime connection yet; wait about 1 minute and try again", hostname)
}

func (h *shellAPI) establish(r *http.Request, req shellEstablishReq) (shellEstablishResp, error) {
	ctx, p := r.Context(), principal(r.Context())
	t, err := h.target(ctx, p, req.ref(), req.OperationToken)
	if err != nil {
		return shellEstablishResp{}, err
	}
	if !t.SocketLive {
		return shellEstablishResp{}, socketMissing(t.Hostname)
	}
	if err := t.Require(proto.CapShell); err != nil {
		return shellEstablishResp{}, err
	}
	est, err := h.svc.Establish(ctx, t, p.Username, shells.Options{Cols: req.Cols, Rows: req.Rows, IdleTimeoutSeconds: req.IdleTimeoutSeconds})
	if err != nil {
		return shellEstablishResp{}, err
	}
	if e := auditFrom(r); e != nil {
		e.Target = "hostname=" + t.Hostname + " session_id=" + est.ID
	}
	idle := req.IdleTimeoutSeconds
	if idle == 0 {
		idle = shells.DefaultIdleTimeout
	}
	return shellEstablishResp{SessionID: est.ID, AgentSocket: true, ExpiresAt: est.ExpiresAt.UTC(), GUID: t.GUID,
		Hostname: t.Hostname, IdleTimeoutSeconds: idle,
		WSURL: "/api/shell/ws/" + url.PathEscape(est.ID) + "?token=" + url.QueryEscape(est.Token)}, nil
}

// ---- disconnect, listing, transcript ----

type shellDisconnectReq struct {
	SessionID string `json:"session_id"`
}

func (q *shellDisconnectReq) validate() error {
	if q.SessionID == "" || len(q.SessionID) > 128 || strings.ContainsFunc(q.SessionID, unicode.IsControl) {
		return cairn.Invalid("session_id", "is required, at most 128 characters")
	}
	return nil
}

// disconnect ends a session: the agent is asked to end the shell
// (vpn_shell_close, best effort, so its exit code is recorded), and both
// sockets are closed after a short grace wherever the agent does not.
func (h *shellAPI) disconnect(r *http.Request, req shellDisconnectReq) (shellSessionJSON, error) {
	ctx, p := r.Context(), principal(r.Context())
	sess, err := h.svc.Get(ctx, p.SiteScope(), req.SessionID)
	if err != nil {
		return shellSessionJSON{}, err
	}
	if e := auditFrom(r); e != nil {
		e.Target = "hostname=" + sess.Hostname + " session_id=" + sess.ID
	}
	if sess.Operator != p.Username && !p.IsAdmin() {
		return shellSessionJSON{}, cairn.Errorf(cairn.ECodeForbidden, "only the operator who opened a shell session, or an administrator, may close it")
	}
	if sess.State == shells.StateClosed {
		return h.view(sess), nil
	}
	reason := "closed by " + p.Username
	if sess.State == shells.StatePending {
		sess, err = h.svc.Finish(ctx, sess.ID, shells.Outcome{Reason: reason})
		return h.view(sess), err
	}
	h.live.MarkClosing(sess.ID, reason)
	grace := time.Duration(0)
	if sess.GUID != "" && h.s.Sockets != nil {
		payload, _ := json.Marshal(proto.ShellClose{SessionID: sess.ID})
		err := h.s.Sockets.Send(ctx, sess.GUID, proto.Envelope{Type: proto.EventShellClose, ID: uuid.NewString(),
			OperationID: uuid.NewString(), Payload: payload})
		if err == nil {
			grace = shellCloseGrace
		} else {
			h.s.Log.Debug("vpn_shell_close not delivered", "session", sess.ID, "err", err)
		}
	}
	if done, ok := h.live.End(sess.ID, reason, grace); ok {
		select {
		case <-done:
		case <-time.After(grace + 10*time.Second):
		case <-ctx.Done():
		}
	}
	// A session bridged by another process ends there once the agent has
	// closed the shell.
	if sess, err = h.svc.Get(ctx, p.SiteScope(), sess.ID); err != nil {
		return shellSessionJSON{}, err
	}
	return h.view(sess), nil
}

type shellSessionJSON struct {
	SessionID           string            `json:"session_id"`
	GUID                *cairn.DeviceGUID `json:"guid"`
	Hostname            string            `json:"hostname"`
	Operator            string            `json:"operator"`
	State               string            `json:"state"`
	Cols                int               `json:"cols"`
	Rows                int               `json:"rows"`
	IdleTimeoutSeconds  int               `json:"idle_timeout_seconds"`
	CreatedAt           time.Time         `json:"created_at"`
	StartedAt           *time.Time        `json:"started_at"`
	EndedAt             *time.Time        `json:"ended_at"`
	DurationSeconds     float64           `json:"duration_seconds"`
	ExitCode            *int              `json:"exit_code"`
	CloseReason         string            `json:"close_reason"`
	ActivityID          *int64            `json:"activity_id"`
	TranscriptBytes     int64             `json:"transcript_bytes"`
	TranscriptTruncated bool              `json:"transcript_truncated"`
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func (h *shellAPI) view(s shells.Session) shellSessionJSON {
	out := shellSessionJSON{SessionID: s.ID, Hostname: s.Hostname, Operator: s.Operator, State: s.State, Cols: s.Cols,
		Rows: s.Rows, IdleTimeoutSeconds: s.IdleTimeoutSeconds, CreatedAt: s.CreatedAt.UTC(), StartedAt: utcPtr(s.StartedAt),
		EndedAt: utcPtr(s.EndedAt), DurationSeconds: s.Duration().Seconds(), ExitCode: s.ExitCode, CloseReason: s.CloseReason,
		TranscriptBytes: s.TranscriptBytes, TranscriptTruncated: s.TranscriptTruncated}
	if s.GUID != "" {
		out.GUID = &s.GUID
	}
	if s.ActivityID != 0 {
		out.ActivityID = &s.ActivityID
	}
	if s.State == shells.StatePending && s.ExpiresAt != nil && h.s.Now().After(*s.ExpiresAt) {
		out.State = "expired"
	}
	return out
}

type shellSessionListJSON struct {
	Sessions []shellSessionJSON `json:"sessions"`
}

func (h *shellAPI) list(r *http.Request) (shellSessionListJSON, error) {
	limit, err := queryInt(r, "limit", shells.DefaultList, 1, shells.MaxList)
	if err != nil {
		return shellSessionListJSON{}, err
	}
	rows, err := h.svc.List(r.Context(), principal(r.Context()).SiteScope(), r.URL.Query().Get("hostname"), limit)
	if err != nil {
		return shellSessionListJSON{}, err
	}
	out := make([]shellSessionJSON, len(rows))
	for i, s := range rows {
		out[i] = h.view(s)
	}
	return shellSessionListJSON{Sessions: out}, nil
}

func (h *shellAPI) transcript(w http.ResponseWriter, r *http.Request) {
	id := pathParam(r, "id")
	size, err := h.svc.Transcript(r.Context(), principal(r.Context()).SiteScope(), id)
	if err != nil {
		writeError(w, r, h.s.Log, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-asciicast")
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.Header().Set("Content-Disposition", `attachment; filename="shell-`+url.PathEscape(id)+`.cast"`)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	// Streamed a page of chunks at a time; a failure past the header can
	// only cut the body short (the length tells the client).
	if err := h.svc.WriteTranscript(r.Context(), id, w); err != nil {
		h.s.ctxLog(r.Context()).Error("stream a shell transcript", "session", id, "err", err)
	}
}

// ---- scoped operation tokens ----

type remoteOpsReq struct {
	GUID       cairn.DeviceGUID `json:"guid"`
	Hostname   string           `json:"hostname"`
	Capability string           `json:"capability"`
}

func (q *remoteOpsReq) ref() deviceRef { return deviceRef{GUID: q.GUID, Hostname: q.Hostname} }

func (q *remoteOpsReq) validate() error {
	var v cairn.Validation
	q.ref().check(&v, nil)
	switch q.Capability {
	case shells.CapShell, shells.CapDesktop, shells.CapFile:
	default:
		v.Add("capability", "must be shell, desktop or file")
	}
	return v.Err()
}

type remoteOpsResp struct {
	Token      string           `json:"token"`
	ExpiresAt  time.Time        `json:"expires_at"`
	Capability string           `json:"capability"`
	GUID       cairn.DeviceGUID `json:"guid"`
}

func (h *shellAPI) remoteOpsSession(r *http.Request, req remoteOpsReq) (remoteOpsResp, error) {
	ctx, p := r.Context(), principal(r.Context())
	need := map[string]proto.Capability{shells.CapShell: proto.CapShell, shells.CapDesktop: proto.CapVNC}
	if _, ok := need[req.Capability]; !ok {
		return remoteOpsResp{}, cairn.Errorf(shells.ECodeNotImplemented, "the %s capability is not available yet; shell and desktop are", req.Capability)
	}
	t, err := h.target(ctx, p, req.ref(), "")
	if err != nil {
		return remoteOpsResp{}, err
	}
	if err := t.Require(need[req.Capability]); err != nil {
		return remoteOpsResp{}, err
	}
	tok, exp, err := h.svc.IssueOpToken(ctx, req.Capability, t, p.Username)
	if err != nil {
		return remoteOpsResp{}, err
	}
	if e := auditFrom(r); e != nil {
		e.Target = "hostname=" + t.Hostname + " capability=" + req.Capability
	}
	return remoteOpsResp{Token: tok, ExpiresAt: exp.UTC(), Capability: req.Capability, GUID: t.GUID}, nil
}
