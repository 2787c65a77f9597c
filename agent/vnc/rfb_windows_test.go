package vnc

import (
	"context"
	"net"
	"strconv"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

var (
	user32         = windows.NewLazySystemDLL("user32.dll")
	gdi32          = windows.NewLazySystemDLL("gdi32.dll")
	procGetDC      = user32.NewProc("GetDC")
	procReleaseDC  = user32.NewProc("ReleaseDC")
	procFillRect   = user32.NewProc("FillRect")
	procSolidBrush = gdi32.NewProc("CreateSolidBrush")
	procDeleteObj  = gdi32.NewProc("DeleteObject")
)

// The Windows role with its real server (GDI capture): vnc_start serves
// the desktop on the listener it is given (the in-process tunnel's in
// the agent; loopback here, as wireguard-go's UDP bind does not run
// under Wine: tunnel_test.go runs the tunnel path on Linux), and the
// admitted Engine address, authenticating with the password the role
// hands over sealed, sees the pixels painted on the screen (under Wine
// on Xvfb).
func TestWindowsRoleServesPaintedPixels(t *testing.T) {
	role := roles.New(nil).Register(roles.VNC)
	port := freePort(t)
	v, err := New(Options{Role: role, VirtualIP: func() string { return "127.0.0.1" },
		Listen: func(p int) (net.Listener, error) {
			return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		}})
	require.NoError(t, err)
	v.port = port
	t.Cleanup(v.Close)
	call := engineCaller{engineIP: "127.0.0.1"}

	// COLORREF 0x00BBGGRR: R=0x31 G=0x9A B=0xE0.
	dc, _, _ := procGetDC.Call(0)
	require.NotZero(t, dc)
	defer procReleaseDC.Call(0, dc)
	brush, _, _ := procSolidBrush.Call(0x00E09A31)
	defer procDeleteObj.Call(brush)
	rect := struct{ l, t, r, b int32 }{100, 100, 200, 150}
	ok, _, _ := procFillRect.Call(dc, uintptr(unsafe.Pointer(&rect)), brush)
	require.NotZero(t, ok)

	st, err := v.Start(context.Background(), call)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", st.ListenAddress)
	require.NotEmpty(t, st.DisplayTopology)
	h, _ := role.Health()
	require.Equal(t, "true", h.Context[proto.VNCContextReady])
	require.Equal(t, serverName, h.Context[proto.VNCContextServer])
	require.NotEmpty(t, h.Context[proto.VNCContextDisplayVirtualBounds])

	pw := password(t, v, call)
	nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	require.NoError(t, err)
	defer nc.Close()
	_, _, px := rfbPixel(t, nc, pw, 150, 120)
	require.Equal(t, [3]byte{0x31, 0x9A, 0xE0}, px)
}
