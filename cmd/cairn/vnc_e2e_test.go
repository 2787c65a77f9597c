package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// startXvfb runs Xvfb inside the namespace on a free display (-displayfd)
// and paints its root window with colour (xsetroot; -noreset keeps it
// when xsetroot, the only client, leaves): the desktop the VNC
// test expects to see. It returns ":N".
func startXvfb(t *testing.T, ns *netns, colour string) string {
	t.Helper()
	for _, tool := range []string{"Xvfb", "x11vnc", "xsetroot", "xrandr"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s is missing: run scripts/deps.sh test (make deps-test)", tool)
	}
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	cmd := exec.Command("ip", "netns", "exec", ns.name, "Xvfb", "-displayfd", "3", "-noreset", "-nolisten", "tcp", "-screen", "0", "160x120x24")
	cmd.ExtraFiles = []*os.File{pw}
	require.NoError(t, cmd.Start())
	_ = pw.Close()
	t.Cleanup(func() {
		_ = unix.Kill(cmd.Process.Pid, unix.SIGTERM)
		_, _ = cmd.Process.Wait()
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	_ = pr.Close()
	require.NoError(t, err, "Xvfb did not report its display")
	display := ":" + strings.TrimSpace(line)
	out, err := exec.Command("ip", "netns", "exec", ns.name, "env", "DISPLAY="+display, "xsetroot", "-solid", colour).CombinedOutput()
	require.NoError(t, err, "xsetroot: %s", out)
	return display
}

// Issue 23, VNC end to end: a real cairn-agent in its own network
// namespace serves an Xvfb display with x11vnc on its tunnel address; a
// session is established through the RemoteDesktop workflow (vnc_start
// before the token), and the test's WebSocket client, playing the
// browser, completes the RFB handshake through the Engine's gateway
// (which authenticated to x11vnc with the agent's runtime password, never
// shown to the browser) and receives a FramebufferUpdate whose pixels are
// the colour painted on the display. Disconnect stops the server and
// records the session's end in the device's activity.
func TestVNCEndToEnd(t *testing.T) {
	t.Parallel()
	var display string
	rig := newTunnelRig(t, rigOptions{hostname: "e2e-vnc", slug: "vnc-e2e", network: "10.233.0.0/24",
		agentEnv: func(t *testing.T, ns *netns) []string {
			display = startXvfb(t, ns, "#ff8000")
			return []string{"DISPLAY=" + display}
		}})
	eng, token, a, guid := rig.eng, rig.token, rig.a, rig.guid

	// With rule 7's diagnostic auth probe: the gateway authenticates to
	// x11vnc with the agent's sealed credential before the token.
	est := eng.post(t, "/api/vnc/establish", token, map[string]any{"guid": guid, "auth_probe": true})
	require.NotEmpty(t, est["session_id"], "%v; agent:\n%s", est, a.output())
	sessionID := est["session_id"].(string)
	require.Equal(t, "160x120+0+0", est["display_virtual_bounds"], "%v", est)
	require.Len(t, est["display_topology"], 1)
	for k := range est {
		require.NotContains(t, strings.ToLower(k), "password")
	}

	// The agent's role row says ready, listening, never probed locally.
	role := func() map[string]any { return rig.roleRow(t, "system:vnc") }
	vr := role()
	require.NotNil(t, vr, "the system:vnc row")
	ctxv := vr["context"].(map[string]any)
	require.Equal(t, "true", ctxv["ready"])
	require.Equal(t, "running", ctxv["service_state"])
	require.Equal(t, "listening", ctxv["listener_state"])
	require.Equal(t, "local_probe_disabled", ctxv["auth_verify_reason"])
	require.NotEmpty(t, ctxv["last_ready_at"])
	require.Equal(t, "160x120+0+0", ctxv["display_virtual_bounds"])
	require.Contains(t, ctxv["display_topology"], `"width":160`)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "wss"+strings.TrimPrefix(eng.httpsBase, "https")+est["ws_url"].(string),
		&websocket.DialOptions{HTTPClient: eng.httpsClient(t), HTTPHeader: http.Header{"Authorization": {"Bearer " + token}},
			Subprotocols: []string{"binary"}})
	require.NoError(t, err)
	defer ws.CloseNow()
	c := websocket.NetConn(ctx, ws, websocket.MessageBinary)

	// The browser's side of RFB 3.8: security type None (the gateway did
	// the VNC authentication), ClientInit shared, ServerInit.
	banner := make([]byte, 12)
	_, err = io.ReadFull(c, banner)
	require.NoError(t, err, "agent:\n%s", a.output())
	require.Equal(t, "RFB 003.008\n", string(banner))
	_, err = c.Write(banner)
	require.NoError(t, err)
	types := make([]byte, 2)
	_, err = io.ReadFull(c, types)
	require.NoError(t, err)
	require.Equal(t, []byte{1, 1}, types, "one security type, None")
	_, err = c.Write([]byte{1})
	require.NoError(t, err)
	result := make([]byte, 4)
	_, err = io.ReadFull(c, result)
	require.NoError(t, err)
	require.Equal(t, []byte{0, 0, 0, 0}, result)
	_, err = c.Write([]byte{1})
	require.NoError(t, err)
	init := make([]byte, 24)
	_, err = io.ReadFull(c, init)
	require.NoError(t, err)
	w, h := binary.BigEndian.Uint16(init[0:2]), binary.BigEndian.Uint16(init[2:4])
	require.Equal(t, [2]uint16{160, 120}, [2]uint16{w, h})
	pf := init[4:20]
	bpp, bigEndian := int(pf[0]), pf[2] != 0
	rmax, gmax, bmax := binary.BigEndian.Uint16(pf[4:6]), binary.BigEndian.Uint16(pf[6:8]), binary.BigEndian.Uint16(pf[8:10])
	rshift, gshift, bshift := pf[10], pf[11], pf[12]
	require.Equal(t, 32, bpp)
	name := make([]byte, binary.BigEndian.Uint32(init[20:24]))
	_, err = io.ReadFull(c, name)
	require.NoError(t, err)

	// FramebufferUpdateRequests for everything (no SetEncodings, so the
	// server answers Raw): the first full, then incremental ones, which
	// x11vnc answers when its scan of the display finds a change, until
	// the screen the test keeps is the colour painted (x11vnc's first
	// frame may precede its first scan).
	screen := make([][3]uint32, int(w)*int(h))
	painted := func() (n int) {
		for _, p := range screen {
			if p == [3]uint32{0xff, 0x80, 0} {
				n++
			}
		}
		return n
	}
	for incremental := byte(0); painted() < len(screen)*95/100 || screen[0] != [3]uint32{0xff, 0x80, 0}; incremental = 1 {
		req := []byte{3, incremental, 0, 0, 0, 0, 0, 0, 0, 0}
		binary.BigEndian.PutUint16(req[6:], w)
		binary.BigEndian.PutUint16(req[8:], h)
		_, err = c.Write(req)
		require.NoError(t, err)
		head := make([]byte, 4)
		_, err = io.ReadFull(c, head)
		require.NoError(t, err, "screen: %d of %d pixels painted", painted(), len(screen))
		for head[0] == 3 {
			// ServerCutText (x11vnc sends the X selection): type, 3
			// bytes of padding, length, text; skip it.
			rest := make([]byte, 4)
			_, err = io.ReadFull(c, rest)
			require.NoError(t, err)
			_, err = io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(rest)))
			require.NoError(t, err)
			_, err = io.ReadFull(c, head)
			require.NoError(t, err)
		}
		require.Equal(t, byte(0), head[0], "a FramebufferUpdate")
		for range binary.BigEndian.Uint16(head[2:4]) {
			rh := make([]byte, 12)
			_, err = io.ReadFull(c, rh)
			require.NoError(t, err)
			rx, ry := int(binary.BigEndian.Uint16(rh[0:2])), int(binary.BigEndian.Uint16(rh[2:4]))
			rw, rhh := int(binary.BigEndian.Uint16(rh[4:6])), int(binary.BigEndian.Uint16(rh[6:8]))
			require.Equal(t, int32(0), int32(binary.BigEndian.Uint32(rh[8:12])), "Raw encoding")
			px := make([]byte, rw*rhh*bpp/8)
			_, err = io.ReadFull(c, px)
			require.NoError(t, err)
			for i := 0; i < rw*rhh; i++ {
				var v uint32
				if bigEndian {
					v = binary.BigEndian.Uint32(px[4*i:])
				} else {
					v = binary.LittleEndian.Uint32(px[4*i:])
				}
				r := (v >> rshift) & uint32(rmax) * 255 / uint32(rmax)
				g := (v >> gshift) & uint32(gmax) * 255 / uint32(gmax)
				b := (v >> bshift) & uint32(bmax) * 255 / uint32(bmax)
				screen[(ry+i/rw)*int(w)+rx+i%rw] = [3]uint32{r, g, b}
			}
		}
	}

	// A key event reaches the display: Caps Lock pressed and released
	// through the gateway turns the X server's Caps Lock indicator on
	// (xset q reads it).
	capsLock := func() string {
		out, err := exec.Command("ip", "netns", "exec", rig.ns.name, "env", "DISPLAY="+display, "xset", "q").CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	require.Regexp(t, `Caps Lock:\s+off`, capsLock())
	_, err = c.Write([]byte{4, 1, 0, 0, 0, 0, 0xff, 0xe5, 4, 0, 0, 0, 0, 0, 0xff, 0xe5})
	require.NoError(t, err)
	require.True(t, assertEventually(30*time.Second, func() bool { return regexp.MustCompile(`Caps Lock:\s+on`).MatchString(capsLock()) }),
		"the key reached the display: %s", capsLock())

	// first_frame_at is recorded; the session is live and listed.
	require.True(t, assertEventually(time.Minute, func() bool {
		s := eng.call(t, "GET", "/api/vnc/sessions/"+sessionID, token, nil)
		return s["first_frame_at"] != nil && s["status"] == "live"
	}), "first_frame_at recorded")
	list := eng.call(t, "GET", "/api/vnc/sessions", token, nil)["sessions"].([]any)
	require.Len(t, list, 1)
	viewers := eng.call(t, "GET", "/api/vnc/viewers", token, nil)
	require.Equal(t, true, viewers["available"], "%v", viewers)
	require.Equal(t, []any{map[string]any{"operator": "admin", "sessions": float64(1)}}, viewers["viewers"])

	// The token was spent: a second socket with it is refused.
	_, res, err := websocket.Dial(ctx, "wss"+strings.TrimPrefix(eng.httpsBase, "https")+est["ws_url"].(string),
		&websocket.DialOptions{HTTPClient: eng.httpsClient(t), HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	require.Error(t, err)
	require.Equal(t, 403, res.StatusCode)

	// Handoff: the owner's second browser takes the live session over.
	// The first browser's socket closes (normally: the workflow's
	// reconnect window covers the switch), the second attaches with the
	// new token and gets the desktop; the session records the handoff.
	ho := eng.post(t, "/api/vnc/handoff", token, map[string]any{"session_id": sessionID})
	require.Equal(t, "admin", ho["previous_operator"], "%v", ho)
	require.Equal(t, "160x120+0+0", ho["display_virtual_bounds"], "%v", ho)
	require.NotEqual(t, est["token"], ho["token"])
	_, err = io.Copy(io.Discard, c)
	require.NoError(t, err, "the first browser's socket was closed normally")
	ws3, _, err := websocket.Dial(ctx, "wss"+strings.TrimPrefix(eng.httpsBase, "https")+ho["ws_url"].(string),
		&websocket.DialOptions{HTTPClient: eng.httpsClient(t), HTTPHeader: http.Header{"Authorization": {"Bearer " + token}},
			Subprotocols: []string{"binary"}})
	require.NoError(t, err)
	defer ws3.CloseNow()
	c3 := websocket.NetConn(ctx, ws3, websocket.MessageBinary)
	for _, step := range []struct {
		read  int
		write []byte
	}{{12, banner}, {2, []byte{1}}, {4, []byte{1}}, {24, nil}} {
		got := make([]byte, step.read)
		_, err = io.ReadFull(c3, got)
		require.NoError(t, err, "the taker's RFB handshake; agent:\n%s", a.output())
		if step.read == 24 {
			require.Equal(t, []byte{0, 160, 0, 120}, got[:4], "ServerInit for the taker")
		}
		if step.write != nil {
			_, err = c3.Write(step.write)
			require.NoError(t, err)
		}
	}
	require.True(t, assertEventually(time.Minute, func() bool {
		s := eng.call(t, "GET", "/api/vnc/sessions/"+sessionID, token, nil)
		return s["status"] == "live" && s["handoffs"] == float64(1) && s["handed_off_from"] == "admin" && s["handed_off_at"] != nil
	}), "the handoff is recorded and the taker is live: %v", eng.call(t, "GET", "/api/vnc/sessions/"+sessionID, token, nil))
	// The taker's topology came from vnc_refresh, which ended as
	// vnc_start did (succeeded), the server kept.
	statusOf := func(summary string) string {
		for _, e := range eng.call(t, "GET", "/api/device/activity/"+a.hostname, token, nil)["activity"].([]any) {
			if m := e.(map[string]any); m["summary"] == summary {
				return m["status"].(string)
			}
		}
		return ""
	}
	require.NotEmpty(t, statusOf("Start the VNC server"))
	require.Equal(t, statusOf("Start the VNC server"), statusOf("Refresh the VNC display topology"))

	// x11vnc listens on the tunnel address only, and its password file
	// was removed once read (the password is on no command line).
	require.Equal(t, []string{net.JoinHostPort(rig.vip, "5900")}, listeners5900(t, rig.ns))
	cmdline := x11vncCmdline(t, rig.ns)
	require.Contains(t, cmdline, "-allow 10.233.0.1", "only the Engine's tunnel address is admitted")
	m := regexp.MustCompile(`-passwdfile rm:(\S+)`).FindStringSubmatch(cmdline)
	require.NotNil(t, m, cmdline)
	_, err = os.Stat(m[1])
	require.ErrorIs(t, err, os.ErrNotExist, "x11vnc removed the password file")

	// Disconnect: the workflow stops the server and records the end.
	eng.post(t, "/api/vnc/disconnect", token, map[string]any{"session_id": sessionID})
	require.True(t, assertEventually(time.Minute, func() bool {
		return eng.call(t, "GET", "/api/vnc/sessions/"+sessionID, token, nil)["status"] == "ended"
	}), "the session ended")
	require.True(t, assertEventually(time.Minute, func() bool {
		r := role()
		return r != nil && r["context"].(map[string]any)["service_state"] == "stopped"
	}), "vnc_stop stopped x11vnc")
	require.Empty(t, listeners5900(t, rig.ns), "nothing listens on 5900 once stopped")
	acts, err := json.Marshal(eng.call(t, "GET", "/api/device/activity/"+a.hostname, token, nil))
	require.NoError(t, err)
	require.Contains(t, string(acts), `"kind":"remote_desktop"`)
	require.Contains(t, string(acts), "Remote desktop session (stopped)")

	// Rule 7: after an auth failure the browser asks for vnc_auth_retry;
	// the agent rotates its password and restarts x11vnc with it, and
	// the gateway authenticates with the new one (it asked for it before
	// dialing). A second retry meanwhile is refused.
	retry := eng.post(t, "/api/vnc/establish", token, map[string]any{"guid": guid, "reason": "vnc_auth_retry"})
	require.NotEmpty(t, retry["session_id"], "%v; agent:\n%s", retry, a.output())
	before := x11vncPID(t, rig.ns)
	again := eng.rawCall(t, "POST", "/api/vnc/establish", token, map[string]any{"guid": guid, "reason": "vnc_auth_retry"})
	require.Equal(t, 409, again.status, again.body)
	require.Contains(t, again.body, "vnc_auth_retry_in_progress")
	ws2, _, err := websocket.Dial(ctx, "wss"+strings.TrimPrefix(eng.httpsBase, "https")+retry["ws_url"].(string),
		&websocket.DialOptions{HTTPClient: eng.httpsClient(t), HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	require.NoError(t, err)
	defer ws2.CloseNow()
	c2 := websocket.NetConn(ctx, ws2, websocket.MessageBinary)
	_, err = io.ReadFull(c2, banner)
	require.NoError(t, err, "the gateway authenticated with the rotated password; agent:\n%s", a.output())
	_, err = c2.Write(banner)
	require.NoError(t, err)
	_, err = io.ReadFull(c2, types)
	require.NoError(t, err)
	_, err = c2.Write([]byte{1})
	require.NoError(t, err)
	_, err = io.ReadFull(c2, result)
	require.NoError(t, err)
	_, err = c2.Write([]byte{1})
	require.NoError(t, err)
	_, err = io.ReadFull(c2, init)
	require.NoError(t, err)
	require.Equal(t, []byte{0, 160, 0, 120}, init[:4], "ServerInit through the rotated credential")
	require.NotEqual(t, before, x11vncPID(t, rig.ns), "x11vnc restarted with the new password")
	eng.post(t, "/api/vnc/disconnect", token, map[string]any{"session_id": retry["session_id"]})
}

// listeners5900 are the addresses listening on TCP 5900 in the namespace.
func listeners5900(t *testing.T, ns *netns) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns.name, "ss", "-Hltn", "sport", "=", ":5900").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var addrs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) >= 4 {
			addrs = append(addrs, f[3])
		}
	}
	return addrs
}

// x11vncPID is the PID of the x11vnc in the namespace.
func x11vncPID(t *testing.T, ns *netns) string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "pids", ns.name).Output()
	require.NoError(t, err)
	for _, pid := range strings.Fields(string(out)) {
		comm, _ := os.ReadFile("/proc/" + pid + "/comm")
		if strings.TrimSpace(string(comm)) == "x11vnc" {
			return pid
		}
	}
	t.Fatal("no x11vnc in the agent's namespace")
	return ""
}

// x11vncCmdline is the command line of the x11vnc in the namespace.
func x11vncCmdline(t *testing.T, ns *netns) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + x11vncPID(t, ns) + "/cmdline")
	require.NoError(t, err)
	return strings.ReplaceAll(string(b), "\x00", " ")
}
