package tunnels

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/proto/wgnet"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// fakePM writes a package manager script named name into dir that logs
// each call to dir/calls and either fails or installs wg and wg-quick.
func fakePM(t *testing.T, dir, name string, succeed bool) {
	t.Helper()
	body := "#!/bin/sh\necho \"$0 $*\" >> " + filepath.Join(dir, "calls") + "\n"
	if succeed {
		for _, tool := range []string{"wg", "wg-quick"} {
			p := filepath.Join(dir, tool)
			body += "printf '#!/bin/sh\\nexit 0\\n' > " + p + "\n/bin/chmod 755 " + p + "\n"
		}
		body += "exit 0\n"
	} else {
		body += "echo 'E: Unable to locate package wireguard-tools' >&2\nexit 100\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755))
}

func calls(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "calls"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Behaviour 9: the first package manager found installs the tools; a
// failure is reported with the manager's error and not retried for 15
// minutes; a manual install is found at the next check regardless.
func TestToolsInstallThrottle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := testLogger()

	t.Run("failure is throttled", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		fakePM(t, dir, "apt-get", false)
		fakePM(t, dir, "apk", true) // later in the order: never reached
		clk := &clock{now: time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)}
		tools := &Tools{Path: dir, Now: clk.Now}
		err := tools.Ensure(ctx, log)
		var pe *proto.Error
		require.ErrorAs(t, err, &pe)
		require.Equal(t, proto.CodeTunnelToolsMissing, pe.Code)
		require.Contains(t, pe.Message, "Unable to locate package wireguard-tools")
		require.Equal(t, []string{filepath.Join(dir, "apt-get") + " install -y wireguard-tools"}, calls(t, dir))

		clk.Add(14 * time.Minute)
		err = tools.Ensure(ctx, log)
		require.ErrorAs(t, err, &pe)
		require.Contains(t, pe.Message, "next attempt is after 2026-11-29T03:15:00Z")
		require.Len(t, calls(t, dir), 1, "no second attempt within 15 minutes")

		clk.Add(time.Minute)
		require.Error(t, tools.Ensure(ctx, log))
		require.Len(t, calls(t, dir), 2, "attempted again after 15 minutes")

		// An operator installs the tools by hand: found at once.
		for _, tool := range []string{"wg", "wg-quick"} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, tool), []byte("#!/bin/sh\n"), 0o755))
		}
		require.NoError(t, tools.Ensure(ctx, log))
		require.Len(t, calls(t, dir), 2)
	})
	t.Run("first manager found installs", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		fakePM(t, dir, "zypper", true)
		fakePM(t, dir, "pacman", false)
		tools := &Tools{Path: dir}
		require.NoError(t, tools.Ensure(ctx, log))
		require.Equal(t, []string{filepath.Join(dir, "zypper") + " --non-interactive install wireguard-tools"}, calls(t, dir))
		require.NoError(t, tools.Ensure(ctx, log))
		require.Len(t, calls(t, dir), 1, "present tools are not installed again")
	})
	t.Run("no package manager", func(t *testing.T) {
		t.Parallel()
		err := (&Tools{Path: t.TempDir()}).Ensure(ctx, log)
		var pe *proto.Error
		require.ErrorAs(t, err, &pe)
		require.Contains(t, pe.Message, "no supported package manager")
	})
}

func TestParseLatestHandshakes(t *testing.T) {
	t.Parallel()
	k, _ := wgnet.GenerateKey()
	other, _ := wgnet.GenerateKey()
	out := other.Public().String() + "\t1700000000\n" + k.Public().String() + "\t1800000000\n"
	require.Equal(t, time.Unix(1800000000, 0).UTC(), parseLatestHandshakes(out, k.Public()))
	require.True(t, parseLatestHandshakes(k.Public().String()+"\t0\n", k.Public()).IsZero())
}

// engine is a user-space WireGuard standing in for the Engine, and a
// Caller answering ensure and ready as it would.
type engine struct {
	t        *testing.T
	key      wgnet.Key
	dev      *wgnet.Device
	port     int
	primary  string
	fallback string
	mu       sync.Mutex
	ready    []proto.VPNReadyRequest
	agentKey string
}

func newEngine(t *testing.T) *engine {
	key, _ := wgnet.GenerateKey()
	dev, err := wgnet.Start(wgnet.Config{PrivateKey: key, Address: netip.MustParseAddr("10.213.0.1")})
	require.NoError(t, err)
	t.Cleanup(dev.Close)
	return &engine{t: t, key: key, dev: dev, port: dev.ListenPort()}
}

func (e *engine) Call(_ context.Context, method, path string, in, out any) error {
	switch path {
	case proto.PathVPNEnsure:
		req := in.(proto.VPNEnsureRequest)
		k, err := wgnet.ParseKey(req.PublicKey)
		if err != nil {
			return err
		}
		e.mu.Lock()
		e.agentKey = req.PublicKey
		e.mu.Unlock()
		if err := e.dev.SetPeers([]wgnet.Peer{{PublicKey: k, AllowedIP: netip.MustParseAddr("10.213.0.2")}}); err != nil {
			return err
		}
		*(out.(*proto.VPNEnsureResponse)) = proto.VPNEnsureResponse{TunnelID: "6f7c2f5e-0000-4000-8000-000000000001",
			VirtualIP: "10.213.0.2", EngineIP: "10.213.0.1", ServerPublicKey: e.key.Public().String(),
			Endpoint: e.primary, FallbackEndpoint: e.fallback, PersistentKeepalive: 1, MTU: 1420}
		return nil
	case proto.PathVPNReady:
		e.mu.Lock()
		e.ready = append(e.ready, in.(proto.VPNReadyRequest))
		e.mu.Unlock()
		*(out.(*json.RawMessage)) = json.RawMessage(`{}`)
		return nil
	}
	return errors.New("unexpected call " + method + " " + path)
}

// deadEndpoint is a loopback UDP port nothing answers on.
func deadEndpoint(t *testing.T) string {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	addr := c.LocalAddr().String()
	require.NoError(t, c.Close())
	return addr
}

// Behaviour 9 in user space: no handshake on the primary endpoint for the
// wait, so the fallback is tried and the tunnel comes up through it; the
// Engine reaches a service the agent serves on its tunnel address; the
// role carries virtual IP, tunnel ID and agent ID. When neither endpoint
// answers, the primary is restored and the role reports the failure.
func TestNetstackTunnelFallsBackAndRecovers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eng := newEngine(t)
	eng.primary = deadEndpoint(t)
	eng.fallback = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(eng.port)).String()
	tracker := roles.New(nil)
	role := tracker.Register(roles.VPNTunnel)
	tun := New(ctx, Options{Dir: t.TempDir(), Mode: ModeNetstack, Role: role, AgentID: func() string { return "agent-7" },
		FallbackWait: 2 * time.Second})
	defer tun.Close()

	started := time.Now()
	st, err := tun.Ensure(ctx, eng)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(started), 2*time.Second, "the primary was given its wait first")
	require.Equal(t, eng.fallback, st.Endpoint)
	require.Equal(t, ModeNetstack, st.Mode)
	h, ok := role.Health()
	require.True(t, ok)
	require.Equal(t, proto.RoleHealthy, h.Observed)
	require.Equal(t, map[string]string{"virtual_ip": "10.213.0.2", "tunnel_id": "6f7c2f5e-0000-4000-8000-000000000001",
		"agent_id": "agent-7", "endpoint": eng.fallback, "mode": ModeNetstack}, h.Context)
	require.Len(t, eng.ready, 1)
	require.True(t, eng.ready[0].Ready)
	require.NotNil(t, eng.ready[0].Role)
	require.Equal(t, proto.RoleKeyVPNTunnel, eng.ready[0].Role.Key)

	// The Engine reaches the agent's tunnel address.
	b := tun.backend.(*netstackBackend)
	l, err := b.dev.ListenTCP(5900)
	require.NoError(t, err)
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			_, _ = c.Write([]byte("RFB 003.008\n"))
			_ = c.Close()
		}
	}()
	c, err := eng.dev.DialTCP(ctx, netip.MustParseAddrPort("10.213.0.2:5900"))
	require.NoError(t, err)
	buf := make([]byte, 12)
	_, err = c.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "RFB 003.008\n", string(buf))
	_ = c.Close()

	// Neither endpoint answers: the primary configuration is restored.
	eng.fallback = deadEndpoint(t)
	tun2 := New(ctx, Options{Dir: t.TempDir(), Mode: ModeNetstack, Role: role, FallbackWait: time.Second})
	defer tun2.Close()
	_, err = tun2.Ensure(ctx, eng)
	var pe *proto.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, proto.CodeTunnelNoHandshake, pe.Code)
	require.Equal(t, eng.primary, tun2.backend.(*netstackBackend).server.Endpoint, "the primary endpoint is restored")
	h, _ = role.Health()
	require.Equal(t, proto.RoleUnhealthy, h.Observed)
	require.Contains(t, h.LastError, "no WireGuard handshake")
	require.False(t, eng.ready[len(eng.ready)-1].Ready)
}

// Where wg-quick cannot make an interface, an agent whose mode was not
// forced runs the tunnel inside its own process instead.
func TestWgQuickFailureFallsBackToNetstack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := t.TempDir()
	for name, body := range map[string]string{
		"wg":       "#!/bin/sh\nexit 0\n",
		"ip":       "#!/bin/sh\nexit 1\n", // no interface yet
		"wg-quick": "#!/bin/sh\necho 'RTNETLINK answers: Operation not permitted' >&2\nexit 1\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755))
	}
	eng := newEngine(t)
	eng.primary = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(eng.port)).String()
	tun := New(ctx, Options{Dir: t.TempDir(), Tools: &Tools{Path: bin}, FallbackWait: 5 * time.Second})
	require.True(t, tun.auto)
	tun.opts.Mode = "wg-quick" // as on Linux, whatever the test host
	defer tun.Close()
	st, err := tun.Ensure(ctx, eng)
	require.NoError(t, err)
	require.Equal(t, ModeNetstack, st.Mode)

	// A forced mode does not fall back.
	forced := New(ctx, Options{Dir: t.TempDir(), Mode: "wg-quick", Tools: &Tools{Path: bin}})
	_, err = forced.Ensure(ctx, eng)
	require.ErrorContains(t, err, "Operation not permitted")
}
