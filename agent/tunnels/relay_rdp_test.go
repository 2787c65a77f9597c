package tunnels

import (
	"bufio"
	"context"
	"net"
	"net/netip"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	agentrdp "github.com/cairn-rmm/cairn/agent/rdp"
	"github.com/cairn-rmm/cairn/agent/registry"
	"github.com/cairn-rmm/cairn/agent/registry/registrytest"
)

// runningSCM is a TermService that runs, automatic.
type runningSCM struct{}

func (runningSCM) Query(context.Context) (string, string, error) {
	return "running", agentrdp.StartModeAuto, nil
}
func (runningSCM) SetAutomatic(context.Context) error { return nil }
func (runningSCM) Start(context.Context) error        { return nil }
func (runningSCM) Restart(context.Context) error      { return nil }

type noRules struct{}

func (noRules) List(context.Context, string) ([]agentrdp.FirewallRule, error) { return nil, nil }
func (noRules) Add(context.Context, agentrdp.FirewallRule) error              { return nil }
func (noRules) Remove(context.Context, string) error                          { return nil }

// The Windows path end to end on Linux: the RDP role over a Terminal
// Service on 127.0.0.1 (an echo server standing in) with the in-process
// tunnel as its relay; rdp_start makes the service reachable from the
// Engine's user-space peer at the tunnel address, and a Home edition
// (no RDP server) takes the relay away.
func TestWindowsRDPRoleThroughNetstackRelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eng := newEngine(t)
	eng.primary = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(eng.port)).String()
	tun := New(ctx, Options{Dir: t.TempDir(), Mode: ModeNetstack})
	defer tun.Close()
	st, err := tun.Ensure(ctx, eng)
	require.NoError(t, err)

	target := echoServer(t)
	_, p, _ := net.SplitHostPort(target)
	port, _ := strconv.Atoi(p)
	reg := registrytest.New()
	for _, k := range []string{`SYSTEM`, `SYSTEM\CurrentControlSet`, `SYSTEM\CurrentControlSet\Control`,
		`SYSTEM\CurrentControlSet\Control\Terminal Server`} {
		require.NoError(t, reg.CreateKey(registry.Path{Root: "HKLM", Sub: k}))
	}
	role := agentrdp.New(agentrdp.Options{Port: port, Relay: tun,
		VirtualIP: func() string { return st.VirtualIP },
		Service:   &agentrdp.TermService{Registry: reg, SCM: runningSCM{}, Rules: noRules{}}})
	started, err := role.Ensure(ctx, nil, true, false)
	require.NoError(t, err)
	require.Equal(t, "10.213.0.2", started.ListenAddress)

	c, err := eng.dev.DialTCP(ctx, netip.AddrPortFrom(netip.MustParseAddr(started.ListenAddress), uint16(port)))
	require.NoError(t, err)
	_, err = c.Write([]byte("rdp\n"))
	require.NoError(t, err)
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "echo: rdp\n", line)
	_ = c.Close()

	require.NoError(t, reg.CreateKey(registry.Path{Root: "HKLM", Sub: `SOFTWARE\Microsoft`}))
	require.NoError(t, reg.CreateKey(registry.Path{Root: "HKLM", Sub: `SOFTWARE\Microsoft\Windows NT`}))
	require.NoError(t, reg.CreateKey(agentrdp.CurrentVersionKey))
	require.NoError(t, reg.SetValue(agentrdp.CurrentVersionKey, registry.Value{Name: "EditionID", Type: registry.TypeSZ, Data: "Core"}, true))
	_, err = role.Ensure(ctx, nil, true, false)
	require.Error(t, err)
	c, err = eng.dev.DialTCP(ctx, netip.AddrPortFrom(netip.MustParseAddr(started.ListenAddress), uint16(port)))
	if err == nil {
		_, err = c.Write([]byte("rdp\n"))
		if err == nil {
			_, err = bufio.NewReader(c).ReadString('\n')
		}
		_ = c.Close()
	}
	require.Error(t, err, "no relay once the role is unsupported")
}
