//go:build linux

package shells

import (
	"encoding/json"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

func TestShellRunsCommands(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	opened, c := e.open(t, "s1")
	require.Equal(t, terminalAccount().shell, opened.Shell)
	require.Positive(t, opened.PID)

	c.send("echo $((6*7))\n")
	c.waitOutput("42")

	// The size set by a resize is the one the shell's programs see.
	c.control(proto.ShellControl{Type: proto.ShellResize, Cols: 100, Rows: 40})
	c.send("stty size\n")
	c.waitOutput("40 100")

	// A login shell (its profile was read) with the environment the
	// agent sets.
	c.send("echo \"term=$TERM home=$HOME cwd=$(pwd) profile=$CAIRN_TEST_PROFILE\"\n")
	home := terminalAccount().home
	c.waitOutput("term=xterm-256color home=" + home + " cwd=" + home + " profile=read")
}

func TestShellExitIsReported(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	opened, c := e.open(t, "s1")
	c.send("exit 3\n")
	code, status := c.waitExit()
	require.Equal(t, 3, code)
	require.Equal(t, websocket.StatusNormalClosure, status)
	e.shells.Wait()
	require.True(t, reaped(opened.PID))
}

// bgJob starts a background job that ignores hangups and returns its PID.
func bgJob(t *testing.T, c *client) int {
	t.Helper()
	c.send("(trap '' HUP; exec sleep 1000) & echo \"bg=<$!>\"\n")
	c.waitOutput(">\r\n")
	m := regexp.MustCompile(`bg=<(\d+)>`).FindStringSubmatch(c.out.String())
	require.NotNil(t, m, c.out.String())
	pid, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return pid
}

func TestEngineClosingTheSocketKillsTheShell(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{KillGrace: 50 * time.Millisecond})
	opened, c := e.open(t, "s1")
	job := bgJob(t, c)

	require.NoError(t, c.ws.Close(websocket.StatusNormalClosure, "operator left"))
	e.shells.Wait()
	require.True(t, reaped(opened.PID), "the shell was reaped")
	waitGone(t, job) // the whole session went, the job that ignores SIGHUP too
}

func TestEngineCloseRequest(t *testing.T) {
	t.Parallel()
	// The shell must end of the SIGHUP (exit 129), so its grace before
	// SIGKILL is long: Kill returns as soon as the shell is gone, and with
	// 50 ms a loaded machine sometimes killed it first (exit 137).
	e := setup(t, Options{KillGrace: time.Minute})
	opened, c := e.open(t, "s1")
	job := bgJob(t, c)

	// The close handler answers once the shell is gone.
	exited := make(chan int, 1)
	go func() {
		code, status := c.waitExit()
		if status == websocket.StatusNormalClosure {
			exited <- code
		}
		close(exited)
	}()
	res, err := e.shells.close(t.Context(), dialCaller{}, payload(t, proto.ShellClose{SessionID: "s1"}))
	require.NoError(t, err)
	require.Equal(t, Closed{Closed: true}, res)
	require.True(t, reaped(opened.PID))
	require.Equal(t, 129, <-exited, "128 + SIGHUP")
	waitGone(t, job)

	_, err = e.shells.close(t.Context(), dialCaller{}, payload(t, proto.ShellClose{SessionID: "s1"}))
	requireCode(t, proto.CodeOpNotFound, err)
	_, err = e.shells.close(t.Context(), dialCaller{}, json.RawMessage(`{}`))
	requireCode(t, proto.CodeOpInvalid, err)
}

// Stopping the remote_shell role ends every open shell (issue 27 item
// 4): each is reaped, its socket closed normally, and its exit frame says
// why, for the Engine to record and show the operator.
func TestEndAllEndsEveryShellWithTheReason(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{KillGrace: time.Minute})
	opened1, c1 := e.open(t, "s1")
	opened2, c2 := e.open(t, "s2")
	type exit struct {
		frame  proto.ShellControl
		status websocket.StatusCode
	}
	exits := make(chan exit, 2)
	for _, c := range []*client{c1, c2} {
		go func() { f, st := c.waitExitFrame(); exits <- exit{f, st} }()
	}
	e.shells.EndAll(t.Context(), proto.ShellReasonRoleStopped)
	require.True(t, reaped(opened1.PID))
	require.True(t, reaped(opened2.PID))
	for range 2 {
		got := <-exits
		require.Equal(t, proto.ShellReasonRoleStopped, got.frame.Reason)
		require.Equal(t, websocket.StatusNormalClosure, got.status)
	}
	e.shells.Wait()
	// A shell ended by the shell itself carries no reason of the agent's.
	_, c3 := e.open(t, "s3")
	c3.send("exit 0\n")
	f, _ := c3.waitExitFrame()
	require.Empty(t, f.Reason)
}

func TestIdleShellIsEnded(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{IdleTimeout: 200 * time.Millisecond})
	opened, c := e.open(t, "s1")
	code, status := c.waitExit()
	require.Equal(t, 129, code)
	require.Equal(t, websocket.StatusNormalClosure, status)
	e.shells.Wait()
	require.True(t, reaped(opened.PID))
}

func TestAgentShutdownEndsShells(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	opened, c := e.open(t, "s1")
	e.stop()
	_, status := c.waitExit()
	require.Equal(t, websocket.StatusGoingAway, status)
	e.shells.Wait()
	require.True(t, reaped(opened.PID))
}

func requireCode(t *testing.T, code string, err error) {
	t.Helper()
	var pe *proto.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, code, pe.Code, pe.Message)
}

func TestBadOpenPayloads(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	good := e.engine.request("s1")
	for _, tc := range []struct {
		name   string
		mutate func(*proto.ShellOpen)
	}{
		{"no session", func(r *proto.ShellOpen) { r.SessionID = "" }},
		{"no token", func(r *proto.ShellOpen) { r.Token = "" }},
		{"http url", func(r *proto.ShellOpen) { r.URL = "http://example.test" + proto.PathShellSocket + "/s1" }},
		{"another session's url", func(r *proto.ShellOpen) { r.SessionID = "s2" }},
		{"negative size", func(r *proto.ShellOpen) { r.Cols = -1 }},
		{"huge size", func(r *proto.ShellOpen) { r.Rows = 100000 }},
		{"negative idle", func(r *proto.ShellOpen) { r.IdleTimeoutSeconds = -1 }},
	} {
		req := good
		tc.mutate(&req)
		_, err := e.shells.open(t.Context(), dialCaller{}, payload(t, req))
		requireCode(t, proto.CodeOpInvalid, err)
	}
	_, err := e.shells.open(t.Context(), dialCaller{}, json.RawMessage(`[1]`))
	requireCode(t, proto.CodeOpInvalid, err)
	require.Zero(t, e.engine.dials.Load(), "nothing was dialled")
}

func TestShellLimit(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{MaxShells: 2, KillGrace: 50 * time.Millisecond})
	first, c1 := e.open(t, "s1")
	c1.drain()
	e.open(t, "s2")

	// A redelivered open answers the same shell and takes no slot.
	again, err := e.shells.open(t.Context(), dialCaller{}, payload(t, e.engine.request("s1")))
	require.NoError(t, err)
	require.Equal(t, first, again)

	_, err = e.shells.open(t.Context(), dialCaller{}, payload(t, e.engine.request("s3")))
	requireCode(t, proto.CodeOpShellLimit, err)
	require.EqualValues(t, 2, e.engine.dials.Load(), "the refused open dialled nothing")

	_, err = e.shells.close(t.Context(), dialCaller{}, payload(t, proto.ShellClose{SessionID: "s1"}))
	require.NoError(t, err)
	e.open(t, "s3")
}

func TestDialFailureStartsNothing(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	req := e.engine.request("s1")
	req.Token = "wrong"
	_, err := e.shells.open(t.Context(), dialCaller{}, payload(t, req))
	requireCode(t, proto.CodeOpFailed, err)
	require.EqualValues(t, 1, e.engine.dials.Load())
	e.shells.mu.Lock()
	require.Empty(t, e.shells.sessions)
	e.shells.mu.Unlock()

	// The slot came back: the same session opens once the token is right.
	e.open(t, "s1")
}
