package tunnels

import (
	"bufio"
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// echoServer is a local TCP service (TermService's stand-in) answering
// each line with "echo: <line>".
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					if _, err := c.Write([]byte("echo: " + sc.Text() + "\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// The Windows RDP path without a driver: the Engine reaches a local
// service (127.0.0.1) through the in-process tunnel's :3389 while the
// port is forwarded, also across a restart of the tunnel, and not once
// it is unforwarded. A forward set before the tunnel comes up applies
// when it does.
func TestNetstackForwardRelaysToLocalService(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eng := newEngine(t)
	eng.primary = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(eng.port)).String()
	tun := New(ctx, Options{Dir: t.TempDir(), Mode: ModeNetstack})
	defer tun.Close()
	target := echoServer(t)
	require.NoError(t, tun.Forward(3389, target), "before the tunnel is up: recorded")
	_, err := tun.Ensure(ctx, eng)
	require.NoError(t, err)

	agent := netip.MustParseAddrPort("10.213.0.2:3389")
	roundTrip := func() error {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		c, err := eng.dev.DialTCP(dctx, agent)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.Write([]byte("hello\n")); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return err
		}
		require.Equal(t, "echo: hello\n", line)
		return nil
	}
	require.NoError(t, roundTrip())

	// A second connection while the first is open is relayed too.
	c1, err := eng.dev.DialTCP(ctx, agent)
	require.NoError(t, err)
	require.NoError(t, roundTrip())
	tun.Unforward(3389)
	// The open connection is closed with the relay.
	_ = c1.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = c1.Read(make([]byte, 1))
	require.Error(t, err)
	require.Error(t, roundTrip(), "no relay once unforwarded")

	require.NoError(t, tun.Forward(3389, target))
	require.NoError(t, roundTrip())
	// The tunnel is brought up again (a new device): the forward follows.
	_, err = tun.Ensure(ctx, eng)
	require.NoError(t, err)
	require.NoError(t, roundTrip())
}
