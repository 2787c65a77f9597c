package vnc

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"image"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
	agentruntime "github.com/cairn-rmm/cairn/agent/runtime"
	"github.com/cairn-rmm/cairn/agent/vnc/rfbserver"
)

// fakeDesktop is a 40×20 desktop of one colour on two monitors.
type fakeDesktop struct{}

func (fakeDesktop) Capture() (*image.RGBA, error) {
	img := image.NewRGBA(image.Rect(0, 0, 40, 20))
	for i := 0; i < len(img.Pix); i += 4 {
		copy(img.Pix[i:], []byte{0x12, 0x34, 0x56, 0xff})
	}
	return img, nil
}
func (fakeDesktop) Key(uint32, bool) error        { return nil }
func (fakeDesktop) Pointer(int, int, uint8) error { return nil }
func (fakeDesktop) CutText(string) error          { return nil }
func (fakeDesktop) Monitors() ([]proto.Monitor, error) {
	return []proto.Monitor{{Name: `\\.\DISPLAY1`, Width: 20, Height: 20, Primary: true}, {Name: `\\.\DISPLAY2`, X: 20, Width: 20, Height: 10}}, nil
}

// engineCaller answers /api/agent/vnc/ensure with engineIP as the
// Engine's tunnel address.
type engineCaller struct{ engineIP string }

func (c engineCaller) Call(_ context.Context, _, path string, _, out any) error {
	if path == proto.PathVNCEnsure {
		*(out.(*proto.VNCEnsureResponse)) = proto.VNCEnsureResponse{EngineIP: c.engineIP, Port: proto.VNCPort}
	}
	return nil
}

func setupInProcess(t *testing.T, listen bool) (*VNC, *roles.Role, int) {
	t.Helper()
	role := roles.New(nil).Register(roles.VNC)
	// No RuntimeDir: the in-agent server writes nothing.
	opts := Options{Role: role, VirtualIP: func() string { return "127.0.0.1" }}
	if listen {
		// The in-process tunnel's listener (here a loopback one).
		opts.Listen = func(port int) (net.Listener, error) {
			return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		}
	}
	v, err := New(opts)
	require.NoError(t, err)
	v.opts.Display = "" // no X display: the in-agent server needs none
	v.srv, v.port = &rfbServer{label: "cairn-rfb (test)", open: func() (desktop, error) { return fakeDesktop{}, nil }}, freePort(t)
	t.Cleanup(v.Close)
	return v, role, v.port
}

// password asks the role for its credential the way the Engine does:
// sealed to a session key.
func password(t *testing.T, v *VNC, call agentruntime.Caller) string {
	t.Helper()
	pub, priv, err := proto.VNCKeyPair()
	require.NoError(t, err)
	req, _ := json.Marshal(proto.VNCCredentialRequest{SessionID: "s", PublicKey: pub})
	out, err := v.handleCredential(context.Background(), call, req)
	require.NoError(t, err)
	pw, err := proto.OpenVNCCredential(pub, priv, out.(proto.VNCCredential).Sealed)
	require.NoError(t, err)
	return pw
}

// The in-agent server (the Windows role's) runs without an X display,
// listens only through the tunnel's listener, admits the Engine's
// address only, authenticates with the role's rotating password and
// serves the desktop's pixels; the role reports ready, the server, the
// topology and the virtual bounds like x11vnc's.
func TestInProcessServer(t *testing.T) {
	t.Parallel()
	v, role, port := setupInProcess(t, true)
	call := engineCaller{engineIP: "127.0.0.1"}
	st, err := v.Start(context.Background(), call)
	require.NoError(t, err)
	require.Equal(t, "40x20+0+0", st.DisplayVirtualBounds)
	h, ok := role.Health()
	require.True(t, ok)
	require.Equal(t, proto.RoleHealthy, h.Observed)
	require.Equal(t, "true", h.Context[proto.VNCContextReady])
	require.Equal(t, "running", h.Context[proto.VNCContextServiceState])
	require.Equal(t, "listening", h.Context[proto.VNCContextListenerState])
	require.Equal(t, "cairn-rfb (test)", h.Context[proto.VNCContextServer])
	require.Equal(t, proto.AuthVerifyLocalProbeDisabled, h.Context[proto.VNCContextAuthVerifyReason])
	require.Contains(t, h.Context[proto.VNCContextDisplayTopology], `DISPLAY2`)
	require.NotEmpty(t, h.Context[proto.VNCContextLastReadyAt])

	pw := password(t, v, call)
	nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	require.NoError(t, err)
	defer nc.Close()
	w, _, px := rfbPixel(t, nc, pw, 0, 0)
	require.Equal(t, 40, w)
	require.Equal(t, [3]byte{0x12, 0x34, 0x56}, px)

	// vnc_stop ends the listener.
	_, err = v.handleStop(context.Background(), call, nil)
	require.NoError(t, err)
	_, err = net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	require.Error(t, err)
}

// A peer that is not the Engine's tunnel address gets no banner.
func TestInProcessServerAdmitsOnlyTheEngine(t *testing.T) {
	t.Parallel()
	v, _, port := setupInProcess(t, true)
	_, err := v.Start(context.Background(), engineCaller{engineIP: "10.213.0.1"})
	require.NoError(t, err)
	nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	require.NoError(t, err)
	defer nc.Close()
	_, err = io.ReadFull(nc, make([]byte, 12))
	require.Error(t, err)
}

// Without the in-process tunnel the in-agent server does not listen (it
// never binds a host interface).
func TestInProcessServerNeedsTheTunnelListener(t *testing.T) {
	t.Parallel()
	v, role, _ := setupInProcess(t, false)
	_, err := v.Start(context.Background(), engineCaller{engineIP: "127.0.0.1"})
	require.ErrorContains(t, err, "in-process")
	h, _ := role.Health()
	require.Equal(t, "false", h.Context[proto.VNCContextReady])
}

// rfbPixel authenticates on nc with pw as an RFB 3.8 client, asks for a
// full Raw update of the 1×1 rectangle at (x, y) in the server's default
// format and returns the framebuffer's size and that pixel's RGB.
func rfbPixel(t *testing.T, nc net.Conn, pw string, x, y int) (int, int, [3]byte) {
	t.Helper()
	_ = nc.SetDeadline(time.Now().Add(time.Minute))
	r := bufio.NewReader(nc)
	read := func(n int) []byte {
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		require.NoError(t, err)
		return b
	}
	write := func(b []byte) {
		_, err := nc.Write(b)
		require.NoError(t, err)
	}
	require.Equal(t, "RFB 003.008\n", string(read(12)))
	write([]byte("RFB 003.008\n"))
	require.Equal(t, []byte{1, 2}, read(2), "VNC authentication only")
	write([]byte{2})
	resp, err := rfbserver.AuthResponse(pw, read(16))
	require.NoError(t, err)
	write(append(resp, 1))
	require.Equal(t, []byte{0, 0, 0, 0}, read(4), "the role's password is the server's")
	init := read(24)
	w, h := int(binary.BigEndian.Uint16(init)), int(binary.BigEndian.Uint16(init[2:]))
	read(int(binary.BigEndian.Uint32(init[20:])))
	req := []byte{3, 0}
	req = binary.BigEndian.AppendUint16(req, uint16(x))
	req = binary.BigEndian.AppendUint16(req, uint16(y))
	req = binary.BigEndian.AppendUint16(req, 1)
	req = binary.BigEndian.AppendUint16(req, 1)
	write(req)
	hdr := read(16)
	require.Equal(t, byte(0), hdr[0])
	require.Equal(t, uint16(1), binary.BigEndian.Uint16(hdr[2:]))
	require.Equal(t, int32(rfbserver.EncodingRaw), int32(binary.BigEndian.Uint32(hdr[12:])))
	px := read(4) // 0x00RRGGBB little-endian
	return w, h, [3]byte{px[2], px[1], px[0]}
}
