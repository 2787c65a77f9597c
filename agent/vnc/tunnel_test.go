package vnc

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/proto/wgnet"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// tunnelPair is the agent's in-process tunnel device and the Engine's,
// peered over loopback UDP.
func tunnelPair(t *testing.T) (agent, engine *wgnet.Device) {
	t.Helper()
	ak, err := wgnet.GenerateKey()
	require.NoError(t, err)
	ek, err := wgnet.GenerateKey()
	require.NoError(t, err)
	aAddr, eAddr := netip.MustParseAddr("10.213.0.2"), netip.MustParseAddr("10.213.0.1")
	engine, err = wgnet.Start(wgnet.Config{PrivateKey: ek, Address: eAddr})
	require.NoError(t, err)
	t.Cleanup(engine.Close)
	agent, err = wgnet.Start(wgnet.Config{PrivateKey: ak, Address: aAddr})
	require.NoError(t, err)
	t.Cleanup(agent.Close)
	require.NoError(t, engine.SetPeers([]wgnet.Peer{{PublicKey: ak.Public(), AllowedIP: aAddr}}))
	require.NoError(t, agent.SetPeers([]wgnet.Peer{{PublicKey: ek.Public(), AllowedIP: eAddr,
		Endpoint: net.JoinHostPort("127.0.0.1", strconv.Itoa(engine.ListenPort())), Keepalive: 1}}))
	return agent, engine
}

// The in-agent server through a real in-process WireGuard tunnel: it
// listens inside the agent's netstack device only (Tunnel.ListenTCP's
// path), and the Engine's device, authenticating with the password the
// role hands over sealed, gets the desktop's pixels.
func TestInProcessServerThroughTheTunnel(t *testing.T) {
	t.Parallel()
	agentDev, engineDev := tunnelPair(t)
	role := roles.New(nil).Register(roles.VNC)
	v, err := New(Options{Role: role, VirtualIP: func() string { return "10.213.0.2" }, Listen: agentDev.ListenTCP})
	require.NoError(t, err)
	v.opts.Display = ""
	v.srv = &rfbServer{label: "cairn-rfb (test)", open: func() (desktop, error) { return fakeDesktop{}, nil }}
	t.Cleanup(v.Close)
	call := engineCaller{engineIP: "10.213.0.1"}
	st, err := v.Start(context.Background(), call)
	require.NoError(t, err)
	require.Equal(t, "10.213.0.2", st.ListenAddress)
	require.Equal(t, proto.VNCPort, st.Port)
	pw := password(t, v, call)
	nc, err := engineDev.DialTCP(context.Background(), netip.AddrPortFrom(netip.MustParseAddr("10.213.0.2"), uint16(proto.VNCPort)))
	require.NoError(t, err)
	defer nc.Close()
	_, _, px := rfbPixel(t, nc, pw, 3, 3)
	require.Equal(t, [3]byte{0x12, 0x34, 0x56}, px)
	// Nothing listens on the host: the port is the tunnel's only.
	_, err = net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(proto.VNCPort)))
	require.Error(t, err)
}
