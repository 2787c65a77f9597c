package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/shells"
	"github.com/cairn-rmm/cairn/workflows"
)

// The two sockets of a shell session and the bridge between them (see
// routes_shell.go for the routes and the session records).

// ---- the browser's socket ----

// sameOrigin refuses a cross-site page's socket: a browser always sends
// Origin on WebSocket upgrades and the session cookie rides along, so
// this is the CSRF check of the upgrade. Clients without Origin (API
// clients with a bearer token) pass.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

func (h *shellAPI) browserSocket(w http.ResponseWriter, r *http.Request) {
	ctx, p := r.Context(), principal(r.Context())
	switch {
	case p.ReadOnly():
		// A GET, but it opens a remote shell: a change, not a read.
		writeError(w, r, h.s.Log, cairn.Errorf(cairn.ECodeForbidden, "this API token is read-only"))
		return
	case !isUpgrade(r):
		writeError(w, r, h.s.Log, cairn.Invalid("upgrade", "this address takes a WebSocket upgrade"))
		return
	case !sameOrigin(r):
		writeError(w, r, h.s.Log, cairn.Errorf(cairn.ECodeForbidden, "shell sockets are accepted from the console's own origin only"))
		return
	}
	sess, agentToken, err := h.svc.ClaimBrowser(ctx, pathParam(r, "id"), r.URL.Query().Get("token"), p.Username, h.replica)
	if err != nil {
		if sess.ID != "" {
			h.finish(ctx, sess.ID, shells.Outcome{Failed: true, Reason: "the Engine could not record the session"})
		}
		writeError(w, r, h.s.Log, err)
		return
	}
	live := h.live.Add(sess.ID)
	defer live.Release()
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		h.finish(ctx, sess.ID, shells.Outcome{Failed: true, Reason: "the browser's socket could not be upgraded"})
		return
	}
	h.serve(r, p, sess, agentToken, live, conn)
}

// serve asks the agent to open its side, waits for it, and bridges.
// Refusals from here on go to the browser as an "error" frame.
func (h *shellAPI) serve(r *http.Request, p *auth.Principal, sess shells.Session, agentToken string, live *shells.Live, conn *websocket.Conn) {
	ctx := r.Context()
	fail := func(err error) {
		code, msg := cairn.ErrorCode(err), "the shell could not be opened"
		var ce *cairn.Error
		if errors.As(err, &ce) {
			msg = ce.Message
		} else {
			h.s.Log.Error("shell session", "session", sess.ID, "err", err)
		}
		shells.Refuse(conn, code, msg)
		h.finish(ctx, sess.ID, shells.Outcome{Failed: true, Reason: msg})
	}
	t, err := h.s.Devices.OperationTargetByGUID(ctx, p.SiteScope(), sess.GUID)
	if err != nil {
		fail(err)
		return
	}
	if !t.SocketLive {
		fail(socketMissing(t.Hostname))
		return
	}
	if err := t.Require(proto.CapShell); err != nil {
		// The agent reconnected with another set since establish.
		fail(err)
		return
	}
	payload, err := json.Marshal(proto.ShellOpen{SessionID: sess.ID, URL: h.agentURL(r, sess.ID), Token: agentToken,
		Cols: sess.Cols, Rows: sess.Rows, IdleTimeoutSeconds: sess.IdleTimeoutSeconds})
	if err != nil {
		fail(err)
		return
	}

	opCtx, cancelOp := context.WithCancel(ctx)
	defer cancelOp()
	opDone := make(chan error, 1)
	go func() {
		_, err := h.s.Operations.Run(opCtx, workflows.OperationInput{OperationID: cairn.OperationID(uuid.NewString()), Target: t,
			Type: proto.EventShellOpen, Payload: payload, Kind: "shell_open", Summary: "Open a remote shell",
			Actor: p.Username, Meta: map[string]any{"shell_session_id": sess.ID}, Timeout: shells.AgentWait})
		opDone <- err
	}()
	wait := time.NewTimer(shells.AgentWait)
	defer wait.Stop()
	var agent *websocket.Conn
	for agent == nil {
		select {
		case agent = <-live.Agent():
		case err := <-opDone:
			if err != nil {
				fail(err)
				return
			}
			opDone = nil // opened: the agent's socket is on its way
		case reason := <-live.EndRequested():
			fail(cairn.Errorf(cairn.ECodeConflict, "%s before it opened", reason))
			return
		case <-wait.C:
			fail(cairn.Errorf(shells.ECodeAgentTimeout, "the agent did not open its side of the shell within %s", shells.AgentWait))
			return
		case <-ctx.Done():
			fail(cairn.Errorf(cairn.ECodeUnavailable, "the Engine is shutting down"))
			return
		}
	}
	wait.Stop()

	rec := h.svc.Recorder(sess.ID, sess.Cols, sess.Rows, sess.Hostname+" ("+p.Username+")", time.Now())
	guardCtx, stopGuard := context.WithCancel(ctx)
	guarded := make(chan struct{})
	go func() { defer close(guarded); h.guard(guardCtx, p, sess, live, rec) }()
	res := shells.Bridge(ctx, conn, agent, rec, live.EndRequested())
	stopGuard()
	<-guarded
	if why := live.ClosingReason(); why != "" {
		res.Reason = why
	}
	// The rest of the transcript is stored before the session reads
	// closed, so a closed session's transcript is complete.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	if err := rec.Flush(fctx); err != nil {
		h.s.Log.Error("store the end of a shell transcript", "session", sess.ID, "err", err)
	}
	cancel()
	h.finish(ctx, sess.ID, shells.Outcome{Reason: res.Reason, ExitCode: res.ExitCode})
}

// Reasons the guard ends a bridged session with (its close_reason).
const (
	reasonSessionEnded = "the operator's session ended"
	reasonScopeChanged = "the operator's role or sites changed"
	reasonTokenLapsed  = "the device's access token expired and was not refreshed"
	reasonTokenChanged = "the device is no longer trusted under the token its agent connected with"
)

// guard ends a bridged session once either socket's authentication is
// gone (docs/architecture.md "Socket lifetimes"). On each event-stream
// keep-alive it re-checks, without touching it, the operator's session,
// as event streams do; and the device (deviceEnds): its trust state,
// token version and site against the operator's scope, and, once the
// access token the agent's socket was opened with has expired, whether
// the device holds a newer one. The device is also re-checked at once on
// every agent_status_changed about it, which trust actions and site moves
// emit, so quarantine, revoke, purge and a move end the shell without
// waiting for the tick (issue 21 item 6). Each tick also stores what the
// transcript holds.
func (h *shellAPI) guard(ctx context.Context, p *auth.Principal, sess shells.Session, live *shells.Live, rec *shells.Recorder) {
	every := h.s.EventKeepAlive
	if every <= 0 {
		every = defaultEventKeepAlive
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var changed <-chan events.Event
	if h.s.Bus != nil {
		ch, stop := h.s.Bus.Subscribe(aboutDevice(sess.GUID))
		defer stop()
		changed = ch
	}
	agent := live.AgentAuth()
	for {
		var reason string
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			// A quiet session's transcript is stored within a tick.
			if err := rec.Flush(ctx); err != nil && ctx.Err() == nil {
				h.s.Log.Warn("shell session: store the transcript", "session", sess.ID, "err", err)
			}
			switch h.s.streamEnds(ctx, p) {
			case "session_ended":
				reason = reasonSessionEnded
			case "scope_changed":
				reason = reasonScopeChanged
			default:
				reason = h.deviceEnds(ctx, p, sess, &agent)
			}
		case <-changed:
			reason = h.deviceEnds(ctx, p, sess, &agent)
		}
		if reason != "" {
			h.s.Log.Info("shell session ended by re-check", "session", sess.ID, "reason", reason)
			h.live.End(sess.ID, reason, 0)
			return
		}
	}
}

// aboutDevice passes the agent_status_changed events that may be about
// the device guid (a false positive costs one re-check).
func aboutDevice(guid cairn.DeviceGUID) func(events.Event) bool {
	needle, _ := json.Marshal(guid)
	needle = append([]byte(`"guid":`), needle...)
	return func(e events.Event) bool {
		return e.Type == events.TypeAgentStatusChanged && bytes.Contains(e.Data, needle)
	}
}

// deviceEnds says why the agent's side may not stay open ("" when it
// may), moving agent.ExpiresAt on while the device keeps refreshing.
func (h *shellAPI) deviceEnds(ctx context.Context, p *auth.Principal, sess shells.Session, agent *shells.AgentAuth) string {
	if sess.GUID == "" {
		return devicetrust.EndedBy(devicetrust.ActionPurge)
	}
	rows, err := h.s.Store.ShellDeviceCheck(ctx, string(sess.GUID))
	if err != nil {
		// A database hiccup is not the device's end; the next tick asks again.
		h.s.Log.Warn("shell session: re-check the device", "err", err)
		return ""
	}
	if len(rows) == 0 {
		return devicetrust.EndedBy(devicetrust.ActionPurge)
	}
	d := rows[0]
	switch {
	case d.TrustState == devicetrust.TrustQuarantined:
		return devicetrust.EndedBy(devicetrust.ActionQuarantine)
	case d.TrustState == devicetrust.TrustRevoked:
		return devicetrust.EndedBy(devicetrust.ActionRevoke)
	case d.TrustState != devicetrust.TrustActive || d.TokenVersion != agent.TokenVersion:
		return reasonTokenChanged
	case d.SiteID != sess.SiteID || !p.SiteScope().Allows(d.SiteID):
		return devices.ReasonSiteMoved
	}
	now := h.s.DeviceTokens.Now() // the clock the token's expiry is on
	if agent.ExpiresAt.IsZero() || now.Before(agent.ExpiresAt) {
		return ""
	}
	newest := devicetrust.AccessValidUntil(d.RefreshExpiresAt)
	if !now.Before(newest) {
		return reasonTokenLapsed
	}
	agent.ExpiresAt = newest
	return ""
}

// agentURL is the agent's side of session id on the origin the browser
// reached (the agent must reach this process; docs/architecture.md).
func (h *shellAPI) agentURL(r *http.Request, id string) string {
	o := h.s.originFor(r)
	u := url.URL{Scheme: "ws", Host: o.Host, Path: strings.TrimSuffix(o.Path, "/") + proto.PathShellSocket + "/" + url.PathEscape(id)}
	if o.Scheme == "https" {
		u.Scheme = "wss"
	}
	return u.String()
}

// finish records the outcome; the request may be over, the record not.
func (h *shellAPI) finish(ctx context.Context, id string, o shells.Outcome) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := h.svc.Finish(fctx, id, o); err != nil {
		h.s.Log.Error("record the end of a shell session", "session", id, "err", err)
	}
}

// ---- the agent's socket ----

func (h *shellAPI) agentSocket(w http.ResponseWriter, r *http.Request) {
	ctx, dev, id := r.Context(), deviceFrom(r.Context()), pathParam(r, "id")
	if !h.live.Waiting(id) {
		writeError(w, r, h.s.Log, h.notWaiting(ctx, id, dev.GUID))
		return
	}
	if _, err := h.svc.ClaimAgent(ctx, id, r.Header.Get(proto.HeaderShellToken), dev.GUID); err != nil {
		writeError(w, r, h.s.Log, err)
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		h.live.End(id, "the agent's socket could not be upgraded", 0)
		return
	}
	// The connection outlives this handler: the browser's handler owns
	// it from here.
	if !h.live.Deliver(id, conn, shells.AgentAuth{TokenVersion: dev.TokenVersion, ExpiresAt: dev.ExpiresAt}) {
		_ = conn.Close(websocket.StatusNormalClosure, "the operator's side of the session is gone")
	}
}

// notWaiting explains an agent's socket for a session that does not wait
// here: its browser is on another Engine process (421, as for the
// realtime socket), or there is nothing for this device to join.
func (h *shellAPI) notWaiting(ctx context.Context, id string, guid cairn.DeviceGUID) error {
	sess, err := h.svc.Get(ctx, cairn.AllSites, id)
	if err == nil && sess.GUID == guid && sess.State == shells.StateConnecting && sess.Replica != h.replica {
		return cairn.Errorf(cairn.ECodeWrongWorker, "the operator's side of this shell session is on another Engine process")
	}
	if err != nil && !cairn.IsCode(err, cairn.ECodeNotFound) {
		return err
	}
	return cairn.Errorf(shells.ECodeTokenInvalid, "no shell session of this device waits for its agent here")
}
