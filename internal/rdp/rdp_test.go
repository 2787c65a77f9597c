package rdp_test

import (
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/rdp"
	"github.com/cairn-rmm/cairn/internal/rdp/rdptest"
	"github.com/cairn-rmm/cairn/internal/vnc"
)

// The password is never on xfreerdp's command line; the flags follow
// rules 3 and 4 (NLA, the certificate inside the tunnel, no drive,
// printer or audio redirection, colour and effects per quality).
func TestXfreerdpArgs(t *testing.T) {
	t.Parallel()
	c := rdp.Credentials{Username: "ops", Domain: "CORP", Password: "hunter2-secret"}
	for _, tc := range []struct {
		quality string
		want    []string
		not     []string
	}{
		{rdp.QualitySpeed, []string{"/bpp:16", "-wallpaper", "-themes", "-aero"}, []string{"/bpp:24", "+wallpaper"}},
		{rdp.QualityQuality, []string{"/bpp:24", "+wallpaper", "+themes", "+aero"}, []string{"/bpp:16", "/gfx"}},
	} {
		args := rdp.XfreerdpArgs("127.0.0.1:4000", c, rdp.Params{Quality: tc.quality})
		joined := strings.Join(args, " ")
		require.NotContains(t, joined, "hunter2")
		require.NotContains(t, joined, "/p:")
		for _, a := range append([]string{"/v:127.0.0.1:4000", "/u:ops", "/d:CORP", "/from-stdin", "/sec:nla", "/cert:ignore",
			"/audio-mode:2", "-drives", "-home-drive"}, tc.want...) {
			require.Contains(t, args, a, tc.quality)
		}
		for _, a := range tc.not {
			require.NotContains(t, args, a, tc.quality)
		}
		require.NotContains(t, joined, "/printer")
		require.NotContains(t, joined, "/drive:")
	}
	require.NotContains(t, rdp.Credentials{Password: "hunter2"}.String(), "hunter2")
}

// Rule 5's probe: an X.224 Connection Confirm is an RDP server; a port
// that answers something else, or nothing, is not.
func TestProbe(t *testing.T) {
	t.Parallel()
	serve := func(t *testing.T, answer func(c net.Conn)) rdp.Dialer {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() { defer c.Close(); answer(c) }()
			}
		}()
		return func(ctx context.Context) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", l.Addr().String())
		}
	}
	readRequest := func(c net.Conn) []byte {
		head := make([]byte, 4)
		_, _ = io.ReadFull(c, head)
		body := make([]byte, int(head[2])<<8|int(head[3])-4)
		_, _ = io.ReadFull(c, body)
		return append(head, body...)
	}
	t.Run("confirm", func(t *testing.T) {
		t.Parallel()
		var got []byte
		dial := serve(t, func(c net.Conn) {
			got = readRequest(c)
			// TPKT, X.224 CC, RDP_NEG_RSP selecting CredSSP.
			_, _ = c.Write([]byte{3, 0, 0, 19, 14, 0xD0, 0, 0, 0x12, 0x34, 0, 2, 0, 8, 0, 2, 0, 0, 0})
		})
		res, err := rdp.Probe(context.Background(), dial, 5*time.Second)
		require.NoError(t, err)
		require.Equal(t, rdp.ProtoHybrid, res.Selected)
		require.Equal(t, []byte{3, 0, 0, 19, 14, 0xE0, 0, 0, 0, 0, 0, 1, 0, 8, 0, 3, 0, 0, 0}, got, "a Connection Request offering TLS and NLA")
	})
	t.Run("negotiation failure is still RDP", func(t *testing.T) {
		t.Parallel()
		dial := serve(t, func(c net.Conn) {
			readRequest(c)
			_, _ = c.Write([]byte{3, 0, 0, 19, 14, 0xD0, 0, 0, 0, 0, 0, 3, 0, 8, 0, 5, 0, 0, 0})
		})
		res, err := rdp.Probe(context.Background(), dial, 5*time.Second)
		require.NoError(t, err)
		require.Equal(t, -1, res.Selected)
		require.Equal(t, 5, res.Failure)
	})
	for name, answer := range map[string]func(net.Conn){
		"an RFB server":  func(c net.Conn) { _, _ = c.Write([]byte("RFB 003.008\n")) },
		"closed at once": func(net.Conn) {},
		"silent":         func(c net.Conn) { _, _ = io.Copy(io.Discard, c) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := rdp.Probe(context.Background(), serve(t, answer), time.Second)
			require.Error(t, err)
		})
	}
	t.Run("nothing listening", func(t *testing.T) {
		t.Parallel()
		port := rdptest.FreePort(t)
		_, err := rdp.Probe(context.Background(), func(ctx context.Context) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(port))
		}, time.Second)
		require.ErrorContains(t, err, "connect")
	})
}

func TestManualCredentials(t *testing.T) {
	t.Parallel()
	s := rdp.NewService()
	now := time.Now()
	s.Now = func() time.Time { return now }
	s.HoldManual("a", rdp.Credentials{Username: "u", Password: "p"})
	c, ok := s.TakeManual("a")
	require.True(t, ok)
	require.Equal(t, "p", c.Password)
	_, ok = s.TakeManual("a")
	require.False(t, ok, "taken once")
	s.HoldManual("b", rdp.Credentials{Username: "u", Password: "p"})
	now = now.Add(time.Hour)
	_, ok = s.TakeManual("b")
	require.False(t, ok, "expired")
	s.HoldManual("c", rdp.Credentials{Username: "u", Password: "p"})
	s.Stop("c")
	_, ok = s.TakeManual("c")
	require.False(t, ok, "dropped with the session")
}

// The bridge against a real RDP server (freerdp-shadow-cli with NLA on
// loopback, shadowing a display painted orange): xfreerdp logs in with
// the password read from its standard input (on no process's command
// line), x11vnc exports the bridge's display, and the RFB gateway,
// authenticating with the bridge's one-time password, hands a browser
// the remote desktop's pixels. Wrong credentials fail as rdp_auth_failed
// or rdp_connect_failed, and leave nothing running.
func TestBridge(t *testing.T) {
	t.Parallel()
	const user, password = "rdpuser", "Br1dge-Secret-42"
	port := rdptest.FreePort(t)
	rdptest.Start(t, rdptest.Options{Colour: "#ff8000", User: user, Password: password, Port: port})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	rdptest.WaitListening(t, addr)
	var relayed atomic.Int32
	dial := func(ctx context.Context) (net.Conn, error) {
		relayed.Add(1)
		return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}
	res, err := rdp.Probe(context.Background(), dial, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, rdp.ProtoHybrid, res.Selected, "the server wants NLA")

	s := rdp.NewService()
	s.RuntimeDir = t.TempDir()
	t.Cleanup(s.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	_, err = s.Start(ctx, "bad", dial, rdp.Credentials{Username: user, Password: "wrong-password"}, rdp.Params{Width: 320, Height: 240})
	require.Error(t, err)
	code := cairn.ErrorCode(err)
	require.Contains(t, []string{rdp.ECodeAuthFailed, rdp.ECodeConnectFailed}, code, "%v", err)
	require.Nil(t, s.Bridge("bad"))

	relayed.Store(0)
	b, err := s.Start(ctx, "good", dial, rdp.Credentials{Username: user, Password: password},
		rdp.Params{Width: 320, Height: 240, Quality: rdp.QualityQuality})
	require.NoError(t, err)
	require.Equal(t, int32(1), relayed.Load(), "the relay carried xfreerdp's one connection")
	require.Same(t, b, s.Bridge("good"))
	for pid, cl := range rdptest.Cmdlines(t) {
		require.NotContains(t, cl, password, "process %s", pid)
	}
	require.Contains(t, rdptest.Cmdlines(t)[strconv.Itoa(b.PIDs()["xfreerdp"])], "/from-stdin")

	g := &vnc.Gateway{Config: vnc.DefaultConfig(), Dial: b.Dial,
		Password: func(context.Context) (string, error) { return b.Password(), nil }}
	browser, gw := net.Pipe()
	go func() { _, _ = g.Serve(ctx, gw) }()
	banner := make([]byte, 12)
	_, err = io.ReadFull(browser, banner)
	require.NoError(t, err)
	require.Equal(t, "RFB 003.008\n", string(banner))
	_, err = browser.Write(banner)
	require.NoError(t, err)
	types := make([]byte, 2)
	_, err = io.ReadFull(browser, types)
	require.NoError(t, err)
	require.Equal(t, []byte{1, 1}, types)
	_, err = browser.Write([]byte{1})
	require.NoError(t, err)
	result := make([]byte, 4)
	_, err = io.ReadFull(browser, result)
	require.NoError(t, err)
	_, err = browser.Write([]byte{1})
	require.NoError(t, err)
	w, h := rdptest.AwaitColour(t, browser, [3]int{0xff, 0x80, 0}, 12)
	require.Equal(t, [2]int{320, 240}, [2]int{w, h})
	_ = browser.Close()

	s.Stop("good")
	require.Nil(t, s.Bridge("good"))
	require.True(t, b.Ended())
	for name, pid := range b.PIDs() {
		_, alive := rdptest.Cmdlines(t)[strconv.Itoa(pid)]
		require.False(t, alive, "%s stopped", name)
	}
}
