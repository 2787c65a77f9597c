package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/shells"
)

// shellAgent plays the agent's side of remote shells over a test agent's
// realtime socket, the way agent/shell does it: it hands the test every
// vpn_shell_open and vpn_shell_close it receives, and the test dials the
// shell socket and answers.
type shellAgent struct {
	a      *testAgent
	rt     *websocket.Conn
	opens  chan shellRequest
	closes chan shellRequest
	roles  chan shellRequest
}

type shellRequest struct {
	env  proto.Envelope
	open proto.ShellOpen
}

func (a *testAgent) shellAgent(t *testing.T) *shellAgent {
	t.Helper()
	sa := &shellAgent{a: a, rt: a.connect(t), opens: make(chan shellRequest, 4), closes: make(chan shellRequest, 4),
		roles: make(chan shellRequest, 4)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); sa.rt.CloseNow(); <-done })
	go func() {
		defer close(done)
		for {
			_, b, err := sa.rt.Read(ctx)
			if err != nil {
				return
			}
			var env proto.Envelope
			if json.Unmarshal(b, &env) != nil {
				continue
			}
			switch env.Type {
			case proto.MsgPing:
				_ = writeEnvelope(ctx, sa.rt, proto.Envelope{Type: proto.MsgPong, ID: env.ID})
			case proto.EventShellOpen:
				var open proto.ShellOpen
				_ = json.Unmarshal(env.Payload, &open)
				sa.opens <- shellRequest{env: env, open: open}
			case proto.EventShellClose:
				sa.closes <- shellRequest{env: env}
			case proto.EventRoleDesiredState:
				sa.roles <- shellRequest{env: env}
			}
		}
	}()
	return sa
}

func (sa *shellAgent) nextOpen(t *testing.T) shellRequest {
	t.Helper()
	select {
	case req := <-sa.opens:
		return req
	case <-time.After(20 * time.Second):
		t.Fatal("the agent never got vpn_shell_open")
	}
	return shellRequest{}
}

func (sa *shellAgent) reply(t *testing.T, req shellRequest, payload any) {
	t.Helper()
	b, err := json.Marshal(payload)
	require.NoError(t, err)
	require.NoError(t, writeEnvelope(context.Background(), sa.rt, proto.Envelope{Type: proto.MsgReply, ID: req.env.ID, Payload: b}))
}

// dialShell dials the shell socket named by open as agent a (Device auth,
// DPoP signed for the Engine's public URL, as the real agent does) with
// the given session token.
func (a *testAgent) dialShell(t *testing.T, open proto.ShellOpen, token string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	u, err := url.Parse(open.URL)
	require.NoError(t, err)
	proof, err := agent.NewProof(a.key, "GET", testPublicURL+u.EscapedPath(), a.access, a.f.clk.Now())
	require.NoError(t, err)
	h := http.Header{}
	h.Set(proto.HeaderAgentContext, proto.AgentContextValue(proto.ContextPrivileged))
	h.Set(proto.HeaderDPoP, proof)
	h.Set("Authorization", proto.AuthScheme+" "+a.access)
	h.Set(proto.HeaderShellToken, token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return websocket.Dial(ctx, "ws"+strings.TrimPrefix(a.f.url, "http")+u.EscapedPath(), &websocket.DialOptions{HTTPHeader: h})
}

// browser dials a session's ws_url as the operator of token.
func (f *fixture) browser(t *testing.T, wsURL, token string, header http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Authorization", "Bearer "+token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.url, "http")+wsURL, &websocket.DialOptions{HTTPHeader: h})
}

func readFrame(t *testing.T, c *websocket.Conn) (websocket.MessageType, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	typ, b, err := c.Read(ctx)
	require.NoError(t, err)
	return typ, string(b)
}

func writeFrame(t *testing.T, c *websocket.Conn, typ websocket.MessageType, data string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Write(ctx, typ, []byte(data)))
}

// readClose reads until the socket closes and returns its close status.
func readClose(t *testing.T, c *websocket.Conn) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

// openShell establishes a session on hostname as token, connects the
// browser and the agent's side, and returns both sockets.
func (f *fixture) openShell(t *testing.T, sa *shellAgent, token, hostname string) (sessionID string, browser, agentSide *websocket.Conn) {
	t.Helper()
	est := f.do(t, "POST", "/api/shell/establish", token, map[string]any{"hostname": hostname})
	require.Equal(t, 200, est.Status, est.Raw)
	browser, _, err := f.browser(t, est.Body["ws_url"].(string), token, nil)
	require.NoError(t, err)
	t.Cleanup(func() { browser.CloseNow() })
	req := sa.nextOpen(t)
	agentSide, _, err = sa.a.dialShell(t, req.open, req.open.Token)
	require.NoError(t, err)
	t.Cleanup(func() { agentSide.CloseNow() })
	sa.reply(t, req, proto.ShellOpened{Opened: true, Shell: "/bin/sh", PID: 42})
	return est.Body["session_id"].(string), browser, agentSide
}

// shellSession returns the listed session id of hostname.
func (f *fixture) shellSession(t *testing.T, token, hostname, id string) map[string]any {
	t.Helper()
	r := f.do(t, "GET", "/api/shell/sessions?hostname="+hostname, token, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	for _, s := range r.Body["sessions"].([]any) {
		if m := s.(map[string]any); m["session_id"] == id {
			return m
		}
	}
	return nil
}

// waitClosed waits until the session is recorded as closed.
func (f *fixture) waitClosed(t *testing.T, token, hostname, id string) map[string]any {
	t.Helper()
	var s map[string]any
	require.Eventually(t, func() bool {
		s = f.shellSession(t, token, hostname, id)
		return s != nil && s["state"] == "closed"
	}, 15*time.Second, 50*time.Millisecond)
	return s
}

// shellActivity returns the shell_session activity row of session id once
// it is finished (the session row is closed a moment before it).
func (f *fixture) shellActivity(t *testing.T, token, hostname, id string) map[string]any {
	t.Helper()
	var found map[string]any
	require.Eventually(t, func() bool {
		r := f.do(t, "GET", "/api/device/activity/"+hostname, token, nil)
		require.Equal(t, 200, r.Status, r.Raw)
		for _, a := range r.Body["activity"].([]any) {
			row := a.(map[string]any)
			if row["kind"] == "shell_session" && row["metadata"].(map[string]any)["shell_session_id"] == id {
				found = row
				return row["status"] != "running"
			}
		}
		return false
	}, 10*time.Second, 50*time.Millisecond, "no finished shell_session activity for %s", id)
	return found
}

func TestShellSessionBridgesBrowserAndAgent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "shell")
	a := f.enrolled(t, admin, site, "shell-01")
	sa := a.shellAgent(t)

	est := f.do(t, "POST", "/api/shell/establish", admin, map[string]any{"hostname": "SHELL-01", "cols": 120, "rows": 40})
	require.Equal(t, 200, est.Status, est.Raw)
	id := est.Body["session_id"].(string)
	wsURL := est.Body["ws_url"].(string)
	require.Equal(t, true, est.Body["agent_socket"])
	require.Equal(t, a.guid, est.Body["guid"])
	require.Equal(t, float64(900), est.Body["idle_timeout_seconds"])
	require.True(t, strings.HasPrefix(wsURL, "/api/shell/ws/"+id+"?token="), wsURL)

	// Another origin's page cannot use the session (and does not burn it).
	_, res, err := f.browser(t, wsURL, admin, http.Header{"Origin": {"https://evil.example"}})
	require.Error(t, err)
	require.Equal(t, 403, res.StatusCode)

	browser, _, err := f.browser(t, wsURL, admin, http.Header{"Origin": {f.url}})
	require.NoError(t, err)
	defer browser.CloseNow()

	req := sa.nextOpen(t)
	require.Equal(t, id, req.open.SessionID)
	require.Equal(t, "wss://cairn.example.test"+proto.PathShellSocket+"/"+id, req.open.URL)
	require.NotEmpty(t, req.open.Token)
	require.NotContains(t, wsURL, req.open.Token, "the agent's token is not the browser's")
	require.Equal(t, 120, req.open.Cols)
	require.Equal(t, 40, req.open.Rows)
	require.Equal(t, 900, req.open.IdleTimeoutSeconds)
	agentSide, _, err := a.dialShell(t, req.open, req.open.Token)
	require.NoError(t, err)
	defer agentSide.CloseNow()
	sa.reply(t, req, proto.ShellOpened{Opened: true, Shell: "/bin/sh", PID: 42})

	// The browser's token was single use.
	_, res, err = f.browser(t, wsURL, admin, nil)
	require.Error(t, err)
	require.Equal(t, 403, res.StatusCode)

	// Keystrokes reach the shell, output reaches the browser.
	writeFrame(t, browser, websocket.MessageBinary, "ls\r")
	typ, data := readFrame(t, agentSide)
	require.Equal(t, websocket.MessageBinary, typ)
	require.Equal(t, "ls\r", data)
	writeFrame(t, agentSide, websocket.MessageBinary, "file-one\r\nh\xc3")
	writeFrame(t, agentSide, websocket.MessageBinary, "\xa9\r\n")
	typ, data = readFrame(t, browser)
	require.Equal(t, websocket.MessageBinary, typ)
	require.Equal(t, "file-one\r\nh\xc3", data, "bytes pass as they are")
	readFrame(t, browser)

	// A resize reaches the agent; a resize out of bounds or junk does not.
	writeFrame(t, browser, websocket.MessageText, `{"type":"resize","cols":0,"rows":5000}`)
	writeFrame(t, browser, websocket.MessageText, `not json`)
	writeFrame(t, browser, websocket.MessageText, `{"type":"resize","cols":100,"rows":30}`)
	typ, data = readFrame(t, agentSide)
	require.Equal(t, websocket.MessageText, typ)
	var ctl proto.ShellControl
	require.NoError(t, json.Unmarshal([]byte(data), &ctl))
	require.Equal(t, proto.ShellControl{Type: proto.ShellResize, Cols: 100, Rows: 30}, ctl)

	// The shell exits: the browser gets the code, then a normal close.
	writeFrame(t, agentSide, websocket.MessageText, `{"type":"exit","code":3}`)
	require.NoError(t, agentSide.Close(websocket.StatusNormalClosure, "shell exited"))
	typ, data = readFrame(t, browser)
	require.Equal(t, websocket.MessageText, typ)
	require.JSONEq(t, `{"type":"exit","code":3}`, data)
	require.Equal(t, websocket.StatusNormalClosure, readClose(t, browser))

	s := f.waitClosed(t, admin, "shell-01", id)
	require.Equal(t, float64(3), s["exit_code"])
	require.Equal(t, "admin", s["operator"])
	require.Equal(t, "the shell ended", s["close_reason"])
	require.NotNil(t, s["started_at"])
	require.NotNil(t, s["ended_at"])

	row := f.shellActivity(t, admin, "shell-01", id)
	require.Equal(t, "completed", row["status"])
	require.Equal(t, "admin", row["actor"])
	meta := row["metadata"].(map[string]any)
	require.Equal(t, float64(3), meta["exit_code"])
	require.Contains(t, meta, "duration_ms")
	require.Contains(t, meta, "started_at")
	require.Contains(t, meta, "ended_at")

	// The transcript, for admins only.
	tr := f.do(t, "GET", "/api/shell/sessions/"+id+"/transcript", admin, nil)
	require.Equal(t, 200, tr.Status, tr.Raw)
	require.Equal(t, "application/x-asciicast", tr.Header.Get("Content-Type"))
	lines := strings.Split(strings.TrimSpace(tr.Raw), "\n")
	require.Len(t, lines, 5, tr.Raw) // header, the input, two outputs, one resize
	var header map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &header))
	require.Equal(t, float64(2), header["version"])
	require.Equal(t, float64(120), header["width"])
	var ev []any
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &ev))
	require.Equal(t, "i", ev[1], "the operator's input is recorded")
	require.Equal(t, "ls\r", ev[2])
	require.NoError(t, json.Unmarshal([]byte(lines[2]), &ev))
	require.Equal(t, "o", ev[1])
	require.Equal(t, "file-one\r\nh", ev[2])
	require.NoError(t, json.Unmarshal([]byte(lines[3]), &ev))
	require.Equal(t, "é\r\n", ev[2], "a character split across frames is kept whole")
	op := f.operator(t, "shell-viewer")
	r := f.do(t, "GET", "/api/shell/sessions/"+id+"/transcript", op, nil)
	require.Equal(t, 403, r.Status, r.Raw)

	// The POSTs are in the audit trail with the session they acted on.
	audit := f.do(t, "GET", "/api/server/audit", admin, nil)
	require.Equal(t, 200, audit.Status, audit.Raw)
	found := false
	for _, e := range audit.Body["entries"].([]any) {
		m := e.(map[string]any)
		if m["action"] == "POST /api/shell/establish" && strings.Contains(m["target"].(string), id) {
			found = true
		}
	}
	require.True(t, found, "establish is audited: %s", audit.Raw)
}

// Only the session's own device can attach, with its token, once; and an
// agent that refuses the shell tells the browser why.
func TestShellAgentSideIsTheDevicesOwnAndSingleUse(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "shellown")
	a := f.enrolled(t, admin, site, "own-01")
	b := f.enrolled(t, admin, site, "other-01")
	sa := a.shellAgent(t)

	est := f.do(t, "POST", "/api/shell/establish", admin, map[string]any{"guid": a.guid})
	require.Equal(t, 200, est.Status, est.Raw)
	browser, _, err := f.browser(t, est.Body["ws_url"].(string), admin, nil)
	require.NoError(t, err)
	defer browser.CloseNow()
	req := sa.nextOpen(t)

	_, res, err := b.dialShell(t, req.open, req.open.Token)
	require.Error(t, err, "another device cannot take the session")
	require.Equal(t, 403, res.StatusCode)
	_, res, err = a.dialShell(t, req.open, "wrong-token")
	require.Error(t, err)
	require.Equal(t, 403, res.StatusCode)

	agentSide, _, err := a.dialShell(t, req.open, req.open.Token)
	require.NoError(t, err, "the refusals did not use up the token")
	defer agentSide.CloseNow()
	sa.reply(t, req, proto.ShellOpened{Opened: true})
	_, res, err = a.dialShell(t, req.open, req.open.Token)
	require.Error(t, err, "the agent's token is single use")
	require.Equal(t, 403, res.StatusCode)

	writeFrame(t, browser, websocket.MessageBinary, "id\r")
	_, data := readFrame(t, agentSide)
	require.Equal(t, "id\r", data)

	// The agent's side going away ends the browser's.
	agentSide.CloseNow()
	require.Equal(t, websocket.StatusInternalError, readClose(t, browser))
	s := f.waitClosed(t, admin, "own-01", est.Body["session_id"].(string))
	require.Nil(t, s["exit_code"])

	// An agent that refuses (too many shells) reaches the browser as an
	// error frame before the close.
	est = f.do(t, "POST", "/api/shell/establish", admin, map[string]any{"hostname": "own-01"})
	require.Equal(t, 200, est.Status, est.Raw)
	browser2, _, err := f.browser(t, est.Body["ws_url"].(string), admin, nil)
	require.NoError(t, err)
	defer browser2.CloseNow()
	req = sa.nextOpen(t)
	sa.reply(t, req, proto.Error{Code: proto.CodeOpShellLimit, Message: "this agent already runs 8 shells"})
	typ, data := readFrame(t, browser2)
	require.Equal(t, websocket.MessageText, typ)
	require.JSONEq(t, `{"type":"error","error":"shell_limit","message":"this agent already runs 8 shells"}`, data)
	require.Equal(t, websocket.StatusInternalError, readClose(t, browser2))
	id := est.Body["session_id"].(string)
	f.waitClosed(t, admin, "own-01", id)
	require.Equal(t, "failed", f.shellActivity(t, admin, "own-01", id)["status"])
	r := f.do(t, "GET", "/api/shell/sessions/"+id+"/transcript", admin, nil)
	require.Equal(t, 404, r.Status, "a shell that never opened has no transcript: %s", r.Raw)
}

func TestShellDisconnectClosesBothSides(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "shelldisc")
	a := f.enrolled(t, admin, site, "disc-01")
	sa := a.shellAgent(t)
	owner, other := f.operator(t, "shell-owner"), f.operator(t, "shell-other")
	r := f.do(t, "POST", "/api/user_site_assignments/assign", admin, map[string]any{"usernames": []string{"shell-owner", "shell-other"}, "site_ids": []int64{site}})
	require.Equal(t, 200, r.Status, r.Raw)

	id, browser, agentSide := f.openShell(t, sa, owner, "disc-01")
	writeFrame(t, browser, websocket.MessageBinary, "top\r")
	readFrame(t, agentSide)

	r = f.do(t, "POST", "/api/shell/disconnect", other, map[string]any{"session_id": id})
	require.Equal(t, 403, r.Status, "only the owner or an admin: %s", r.Raw)

	// The agent is asked to end the shell and reports the hangup's code.
	first := agentSide
	go func() {
		select {
		case req := <-sa.closes:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = first.Write(ctx, websocket.MessageText, []byte(`{"type":"exit","code":129}`))
			_ = first.Close(websocket.StatusNormalClosure, "closed by the Engine")
			b, _ := json.Marshal(map[string]bool{"closed": true})
			_ = writeEnvelope(ctx, sa.rt, proto.Envelope{Type: proto.MsgReply, ID: req.env.ID, Payload: b})
		case <-time.After(20 * time.Second):
		}
	}()
	bf := watch(browser)
	r = f.do(t, "POST", "/api/shell/disconnect", owner, map[string]any{"session_id": id})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "closed", r.Body["state"])
	require.Equal(t, float64(129), r.Body["exit_code"])
	require.Equal(t, "closed by shell-owner", r.Body["close_reason"])
	require.Equal(t, []string{`{"type":"exit","code":129}`}, bf.wait(t))
	require.Equal(t, websocket.StatusNormalClosure, bf.status)

	row := f.shellActivity(t, admin, "disc-01", id)
	require.Equal(t, "completed", row["status"])
	require.Equal(t, "shell-owner", row["actor"])
	meta := row["metadata"].(map[string]any)
	require.Equal(t, float64(129), meta["exit_code"])
	require.GreaterOrEqual(t, meta["duration_ms"].(float64), float64(0))
	require.Equal(t, "closed by shell-owner", meta["reason"])
	require.Contains(t, row["summary"], "Remote shell: closed by shell-owner, exit 129, after ")

	// Closing again changes nothing; an admin may close anyone's.
	r = f.do(t, "POST", "/api/shell/disconnect", admin, map[string]any{"session_id": id})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "closed", r.Body["state"])

	// An admin closes a session whose agent does not answer the close:
	// both sockets are closed anyway after the grace.
	id, browser, agentSide = f.openShell(t, sa, owner, "disc-01")
	bf, af := watch(browser), watch(agentSide)
	r = f.do(t, "POST", "/api/shell/disconnect", admin, map[string]any{"session_id": id})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "closed", r.Body["state"])
	require.Equal(t, "closed by admin", r.Body["close_reason"])
	require.Nil(t, r.Body["exit_code"])
	<-sa.closes
	bf.wait(t)
	af.wait(t)
	require.Equal(t, websocket.StatusNormalClosure, bf.status)
	require.Equal(t, websocket.StatusNormalClosure, af.status)
}

// Stopping the remote_shell role through the desired-state route ends
// the device's open shell with a clear reason (issue 27 item 4): the
// agent ends its shells as it stops the role and says why in the exit
// frame; the Engine records that as the session's close reason and tells
// the operator's terminal.
func TestStoppingTheShellRoleEndsOpenShells(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "shellrole")
	a := f.enrolled(t, admin, site, "shellrole-01")
	sa := a.shellAgent(t)
	id, browser, agentSide := f.openShell(t, sa, admin, "shellrole-01")
	writeFrame(t, browser, websocket.MessageBinary, "top\r")
	readFrame(t, agentSide)

	// The agent's side, as agent/shells and cmd/cairn-agent do it: the
	// shell ends with the role's reason before the stop is answered.
	go func() {
		select {
		case req := <-sa.roles:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			exit, _ := json.Marshal(proto.ShellControl{Type: proto.ShellExit, Code: 129, Reason: proto.ShellReasonRoleStopped})
			_ = agentSide.Write(ctx, websocket.MessageText, exit)
			_ = agentSide.Close(websocket.StatusNormalClosure, proto.ShellReasonRoleStopped)
			b, _ := json.Marshal(proto.RoleDesiredStateResult{Role: "remote_shell", Desired: "stopped", Observed: proto.RoleStopped})
			_ = writeEnvelope(ctx, sa.rt, proto.Envelope{Type: proto.MsgReply, ID: req.env.ID, Payload: b})
		case <-time.After(20 * time.Second):
		}
	}()
	bf := watch(browser)
	r := f.do(t, "POST", "/api/device/roles/shellrole-01/desired-state", admin, map[string]any{"role": "remote_shell", "desired": "stopped"})
	require.Equal(t, 200, r.Status, r.Raw)
	frames := bf.wait(t)
	require.Equal(t, websocket.StatusNormalClosure, bf.status)
	require.NotEmpty(t, frames)
	require.Contains(t, strings.Join(frames, ""), string(shells.Notice(proto.ShellReasonRoleStopped)))

	sess := f.waitClosed(t, admin, "shellrole-01", id)
	require.Equal(t, proto.ShellReasonRoleStopped, sess["close_reason"])
	require.Equal(t, float64(129), sess["exit_code"])
}

// watched reads a socket in the background (so close handshakes complete
// while the test waits on something else) and keeps its frames.
type watched struct {
	done   chan struct{}
	frames []string
	status websocket.StatusCode
}

func watch(c *websocket.Conn) *watched {
	w := &watched{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				w.status = websocket.CloseStatus(err)
				return
			}
			w.frames = append(w.frames, string(b))
		}
	}()
	return w
}

// wait returns the frames once the socket closed.
func (w *watched) wait(t *testing.T) []string {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the socket never closed")
	}
	return w.frames
}

func TestShellEstablishRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	siteA := f.createSite(t, admin, "shellmine")
	siteB := f.createSite(t, admin, "shellhidden")
	quiet := f.enrolled(t, admin, siteA, "quiet-01")
	hidden := f.enrolled(t, admin, siteB, "hidden-01")
	op := f.operator(t, "shell-scoped")
	r := f.do(t, "POST", "/api/user_site_assignments/assign", admin, map[string]any{"usernames": []string{"shell-scoped"}, "site_ids": []int64{siteA}})
	require.Equal(t, 200, r.Status, r.Raw)

	for _, tc := range []struct {
		body  any
		field string
	}{
		{map[string]any{}, "guid"},
		{map[string]any{"guid": quiet.guid, "hostname": "quiet-01"}, "hostname"},
		{map[string]any{"hostname": "quiet-01", "operation_token": "x"}, "operation_token"},
		{map[string]any{"hostname": strings.Repeat("h", 256)}, "hostname"},
		{map[string]any{"hostname": "quiet-01", "cols": 1001}, "cols"},
		{map[string]any{"hostname": "quiet-01", "rows": -1}, "rows"},
		{map[string]any{"hostname": "quiet-01", "idle_timeout_seconds": 5}, "idle_timeout_seconds"},
		{map[string]any{"hostname": 7}, "hostname"},
	} {
		r := f.do(t, "POST", "/api/shell/establish", op, tc.body)
		require.Equal(t, 400, r.Status, "%v: %s", tc.body, r.Raw)
		require.Equal(t, "validation_failed", r.Body["error"])
		require.NotEmpty(t, r.field(tc.field), "%v: %s", tc.body, r.Raw)
	}
	r = f.do(t, "POST", "/api/shell/disconnect", op, map[string]any{})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("session_id"))

	// No realtime socket yet: the console shows "Agent Onboarding Underway".
	r = f.do(t, "POST", "/api/shell/establish", op, map[string]any{"hostname": "quiet-01"})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "agent_socket_missing", r.Body["error"])
	require.Contains(t, r.Body["message"], "1 minute")

	// Outside the operator's scope is exactly like missing.
	missing := f.do(t, "POST", "/api/shell/establish", op, map[string]any{"hostname": "no-such-host"})
	require.Equal(t, 404, missing.Status, missing.Raw)
	for _, body := range []map[string]any{{"hostname": "hidden-01"}, {"guid": hidden.guid}} {
		r = f.do(t, "POST", "/api/shell/establish", op, body)
		require.Equal(t, 404, r.Status, r.Raw)
		require.Equal(t, missing.Body, r.Body)
	}
	r = f.do(t, "POST", "/api/remote-ops/session", op, map[string]any{"hostname": "hidden-01", "capability": "shell"})
	require.Equal(t, 404, r.Status, r.Raw)
	require.NotContains(t, f.do(t, "GET", "/api/shell/sessions", op, nil).Raw, "hidden-01")

	// Quarantined and revoked devices take no shell.
	q := f.do(t, "POST", "/api/devices/"+quiet.guid+"/quarantine", admin, nil)
	require.Equal(t, 200, q.Status, q.Raw)
	r = f.do(t, "POST", "/api/shell/establish", op, map[string]any{"hostname": "quiet-01"})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "device_quarantined", r.Body["error"])
	rv := f.do(t, "POST", "/api/devices/"+quiet.guid+"/revoke", admin, nil)
	require.Equal(t, 200, rv.Status, rv.Raw)
	r = f.do(t, "POST", "/api/shell/establish", op, map[string]any{"guid": quiet.guid})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "device_revoked", r.Body["error"])

	// The socket routes refuse what is not theirs.
	r = f.do(t, "GET", "/api/shell/ws/nope?token=x", op, nil)
	require.Equal(t, 400, r.Status, "not a WebSocket upgrade: %s", r.Raw)
	_, res, err := f.browser(t, "/api/shell/ws/nope?token=x", op, nil)
	require.Error(t, err)
	require.Equal(t, 403, res.StatusCode)
}

func TestRemoteOpsSessionTokens(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "remoteops")
	a := f.enrolled(t, admin, site, "ops-01")
	sa := a.shellAgent(t)

	r := f.do(t, "POST", "/api/remote-ops/session", admin, map[string]any{"hostname": "ops-01", "capability": "bogus"})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("capability"))
	r = f.do(t, "POST", "/api/remote-ops/session", admin, map[string]any{"capability": "shell"})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("guid"))
	r = f.do(t, "POST", "/api/remote-ops/session", admin, map[string]any{"hostname": "ops-01", "capability": "file"})
	require.Equal(t, 501, r.Status, r.Raw)
	require.Equal(t, "not_implemented", r.Body["error"])

	before := time.Now().Truncate(time.Second)
	tok := f.do(t, "POST", "/api/remote-ops/session", admin, map[string]any{"hostname": "ops-01", "capability": "shell"})
	require.Equal(t, 200, tok.Status, tok.Raw)
	require.Equal(t, "shell", tok.Body["capability"])
	require.Equal(t, a.guid, tok.Body["guid"])
	exp, err := time.Parse(time.RFC3339, tok.Body["expires_at"].(string))
	require.NoError(t, err)
	// A minute from the call, bounded by the call itself (whole seconds).
	require.False(t, exp.Before(before.Add(time.Minute)), "%s", exp)
	require.False(t, exp.After(time.Now().Add(time.Minute)), "%s", exp)

	// Another operator cannot use it.
	op := f.operator(t, "ops-thief")
	r = f.do(t, "POST", "/api/shell/establish", op, map[string]any{"operation_token": tok.Body["token"]})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("operation_token"))

	est := f.do(t, "POST", "/api/shell/establish", admin, map[string]any{"operation_token": tok.Body["token"]})
	require.Equal(t, 200, est.Status, est.Raw)
	require.Equal(t, "ops-01", est.Body["hostname"])
	r = f.do(t, "POST", "/api/shell/establish", admin, map[string]any{"operation_token": tok.Body["token"]})
	require.Equal(t, 400, r.Status, "single use: %s", r.Raw)

	// The established session works like any other, and a session that
	// never connected is closed by a disconnect without the agent.
	r = f.do(t, "POST", "/api/shell/disconnect", admin, map[string]any{"session_id": est.Body["session_id"]})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "closed", r.Body["state"])
	_, res, err := f.browser(t, est.Body["ws_url"].(string), admin, nil)
	require.Error(t, err)
	require.Equal(t, 403, res.StatusCode)
	select {
	case <-sa.opens:
		t.Fatal("nothing is sent to the agent for a session that never connected")
	default:
	}
}
