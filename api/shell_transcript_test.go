package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// castEvents parses an asciicast v2 body into its events.
func castEvents(t *testing.T, raw string) [][]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(raw), "\n")
	var out [][]any
	for _, l := range lines[1:] {
		var ev []any
		require.NoError(t, json.Unmarshal([]byte(l), &ev), "line %q", l)
		out = append(out, ev)
	}
	return out
}

// Issue 21 item 7: the transcript streams to PostgreSQL while the session
// runs (a process that dies no longer takes it along), and a session
// whose transcript reaches its cap ends, telling the operator why,
// instead of recording silently stopping.
func TestShellTranscriptStreamsAndItsCapEndsTheSession(t *testing.T) {
	t.Parallel()
	f := &fixture{store: pgtest.NewDB(t), clk: authtest.NewClock(), github: newFakeGitHub(t), shellTranscriptMax: 16 << 10}
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	admin := f.admin(t)
	site := f.createSite(t, admin, "shellcast")
	a := f.enrolled(t, admin, site, "cast-01")
	sa := a.shellAgent(t)

	id, browser, agentSide := f.openShell(t, sa, admin, "cast-01")
	writeFrame(t, browser, websocket.MessageBinary, "yes\r")
	readFrame(t, agentSide)
	writeFrame(t, agentSide, websocket.MessageBinary, "y\r\n")
	readFrame(t, browser)

	// Stored while the session is still open (the guard's tick writes
	// what the recorder holds).
	require.Eventually(t, func() bool {
		s := f.shellSession(t, admin, "cast-01", id)
		return s["state"] == "open" && s["transcript_bytes"].(float64) > 0
	}, 15*time.Second, 50*time.Millisecond)

	// Output past the cap: the frame that would cross it never reaches
	// the operator; the terminal shows why, then both sides close.
	bf, af := watch(browser), watch(agentSide)
	line := strings.Repeat("y", 1000) + "\r\n"
	sent := 0
	for ; sent < 40; sent++ {
		if writeFrameErr(agentSide, line) != nil {
			break
		}
	}
	frames := bf.wait(t)
	af.wait(t)
	require.NotEmpty(t, frames)
	notice := frames[len(frames)-1]
	require.Contains(t, notice, "[Cairn] The session was closed: the session's transcript reached its limit of 16 KiB.")
	require.Less(t, len(frames)-1, 40, "not every frame reached the operator")

	s := f.waitClosed(t, admin, "cast-01", id)
	require.Equal(t, "the session's transcript reached its limit of 16 KiB", s["close_reason"])
	require.LessOrEqual(t, s["transcript_bytes"].(float64), float64(16<<10))
	require.Equal(t, false, s["transcript_truncated"], "nothing the operator saw is missing")

	tr := f.do(t, "GET", "/api/shell/sessions/"+id+"/transcript", admin, nil)
	require.Equal(t, 200, tr.Status, tr.Raw)
	require.Equal(t, s["transcript_bytes"], float64(len(tr.Raw)))
	ev := castEvents(t, tr.Raw)
	require.Equal(t, []any{"i", "yes\r"}, ev[0][1:])
	require.Equal(t, []any{"o", "y\r\n"}, ev[1][1:])
	last := ev[len(ev)-1]
	require.Equal(t, []any{"m", "the session's transcript reached its limit of 16 KiB"}, last[1:])
	// Every output the operator saw is in the transcript, in order.
	seen := frames[:len(frames)-1]
	var recorded []string
	for _, e := range ev {
		if e[1] == "o" {
			recorded = append(recorded, e[2].(string))
		}
	}
	require.Equal(t, append([]string{"y\r\n"}, seen...), recorded)
}

// writeFrameErr writes a binary frame and reports whether it went out
// (the Engine may close the socket at any point).
func writeFrameErr(c *websocket.Conn, data string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Write(ctx, websocket.MessageBinary, []byte(data))
}

// Issue 21 item 7: a deployment that turns input recording off
// (CAIRN_SHELL_RECORD_INPUT=0) keeps keystrokes, and so passwords typed
// at prompts that do not echo, out of transcripts.
func TestShellTranscriptInputRecordingOff(t *testing.T) {
	t.Parallel()
	f := &fixture{store: pgtest.NewDB(t), clk: authtest.NewClock(), github: newFakeGitHub(t), shellNoInput: true}
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	admin := f.admin(t)
	site := f.createSite(t, admin, "shellnoinput")
	a := f.enrolled(t, admin, site, "noinput-01")
	sa := a.shellAgent(t)

	id, browser, agentSide := f.openShell(t, sa, admin, "noinput-01")
	writeFrame(t, agentSide, websocket.MessageBinary, "Password: ")
	readFrame(t, browser)
	writeFrame(t, browser, websocket.MessageBinary, "hunter2\r")
	_, typed := readFrame(t, agentSide)
	require.Equal(t, "hunter2\r", typed, "the keystrokes still reach the shell")
	writeFrame(t, agentSide, websocket.MessageText, `{"type":"exit","code":0}`)
	require.NoError(t, agentSide.Close(websocket.StatusNormalClosure, "shell exited"))
	readClose(t, browser)
	f.waitClosed(t, admin, "noinput-01", id)

	tr := f.do(t, "GET", "/api/shell/sessions/"+id+"/transcript", admin, nil)
	require.Equal(t, 200, tr.Status, tr.Raw)
	require.NotContains(t, tr.Raw, "hunter2")
	require.Equal(t, [][]any{{"o", "Password: "}}, func() [][]any {
		var out [][]any
		for _, e := range castEvents(t, tr.Raw) {
			out = append(out, e[1:])
		}
		return out
	}())
}
