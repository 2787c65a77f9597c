package tunnels_test

import (
	"context"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/proto/wgnet"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/internal/tunnels"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

type fixture struct {
	store  *db.Store
	cipher *aegis.Cipher
	svc    *tunnels.Service
	port   int
	site   int64
}

// freeUDPPort is a UDP port nothing is bound to now.
func freeUDPPort(t testing.TB) int {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

func setup(t testing.TB, cfg tunnels.Config) fixture {
	t.Helper()
	ctx := context.Background()
	store := pgtest.NewDB(t)
	c := aegis.New(aegis.PGStore{Q: store.Queries, S: store}, authtest.CheapKDF)
	require.NoError(t, c.Setup(ctx, "correct horse battery staple"))
	if cfg.Port == 0 {
		cfg.Port = freeUDPPort(t)
	}
	cfg.Endpoint = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(cfg.Port)).String()
	svc, err := tunnels.New(store, c, nil, cfg, nil)
	require.NoError(t, err)
	site, err := store.SiteInsert(ctx, db.SiteInsertParams{Name: "Tunnels", Slug: "tunnels"})
	require.NoError(t, err)
	return fixture{store: store, cipher: c, svc: svc, port: cfg.Port, site: int64(site.ID)}
}

func (f fixture) device(t testing.TB, guid string) devicetrust.Identity {
	t.Helper()
	_, err := f.store.DeviceInsert(context.Background(), db.DeviceInsertParams{Guid: cairn.DeviceGUID(guid), Hostname: "host-" + guid, SiteID: cairn.SiteID(f.site)})
	require.NoError(t, err)
	return devicetrust.Identity{GUID: cairn.DeviceGUID(guid), Hostname: "host-" + guid, SiteID: cairn.SiteID(f.site)}
}

// agentPeer is a user-space WireGuard device configured from an ensure
// answer, as an agent without an interface would be.
func agentPeer(t testing.TB, key wgnet.Key, ens proto.VPNEnsureResponse) *wgnet.Device {
	t.Helper()
	server, err := wgnet.ParseKey(ens.ServerPublicKey)
	require.NoError(t, err)
	dev, err := wgnet.Start(wgnet.Config{PrivateKey: key, Address: netip.MustParseAddr(ens.VirtualIP)})
	require.NoError(t, err)
	t.Cleanup(dev.Close)
	require.NoError(t, dev.SetPeers([]wgnet.Peer{{PublicKey: server, AllowedIP: netip.MustParseAddr(ens.EngineIP),
		Endpoint: ens.Endpoint, Keepalive: 1}}))
	return dev
}

// The Engine's user-space WireGuard reaches a TCP service on a device's
// tunnel address, the device having only its /32; the peer goes when
// the tunnel is torn down.
func TestEngineReachesTheAgentThroughItsTunnel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, tunnels.Config{})
	id := f.device(t, "guid-1")
	key, err := wgnet.GenerateKey()
	require.NoError(t, err)

	ens, err := f.svc.Ensure(ctx, id, proto.VPNEnsureRequest{PublicKey: key.Public().String()})
	require.NoError(t, err)
	require.Equal(t, "10.213.0.2", ens.VirtualIP)
	require.Equal(t, "10.213.0.1", ens.EngineIP)
	require.Empty(t, ens.FallbackEndpoint)
	again, err := f.svc.Ensure(ctx, id, proto.VPNEnsureRequest{PublicKey: key.Public().String()})
	require.NoError(t, err)
	require.Equal(t, ens, again, "one persistent tunnel per device")

	changes := make(chan struct{}, 1)
	srv := tunnels.NewServer(f.svc, "replica-a", f.cipher.Unlocked, changes)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); srv.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })

	agent := agentPeer(t, key, ens)
	l, err := agent.ListenTCP(5900)
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("RFB 003.008\n"))
			_ = c.Close()
		}
	}()
	var probe tunnels.Probe
	require.Eventually(t, func() bool {
		probe, err = srv.Probe(ctx, id.GUID, 5900, 2*time.Second)
		return err == nil
	}, time.Minute, 100*time.Millisecond, "last: %v", err)
	require.Equal(t, "RFB 003.008\n", probe.Banner)
	require.True(t, probe.BannerRead)

	// The Engine's view of the handshake reaches the table.
	changes <- struct{}{}
	require.Eventually(t, func() bool {
		tun, err := f.svc.Get(ctx, id.GUID)
		require.NoError(t, err)
		return tun.LastHandshakeAt != nil
	}, time.Minute, 100*time.Millisecond)

	// Torn down: the peer is gone from the Engine's device at the next
	// reconcile; the address is free for the next device.
	gone, err := f.svc.TearDown(ctx, id.GUID)
	require.NoError(t, err)
	require.True(t, gone)
	require.NoError(t, srv.Reconcile(ctx))
	_, err = srv.Probe(ctx, id.GUID, 5900, time.Second)
	require.Equal(t, tunnels.ECodeNoTunnel, cairn.ErrorCode(err))
	other := f.device(t, "guid-2")
	ens2, err := f.svc.Ensure(ctx, other, proto.VPNEnsureRequest{PublicKey: key.Public().String()})
	require.NoError(t, err)
	require.Equal(t, "10.213.0.2", ens2.VirtualIP, "the torn-down tunnel's address is reused")
}

// A quarantined device's peer leaves the Engine's device even before its
// row is removed; its address is never reachable while quarantined.
func TestQuarantinedDeviceHasNoPeer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, tunnels.Config{})
	id := f.device(t, "guid-q")
	key, err := wgnet.GenerateKey()
	require.NoError(t, err)
	ens, err := f.svc.Ensure(ctx, id, proto.VPNEnsureRequest{PublicKey: key.Public().String()})
	require.NoError(t, err)
	// Another device's tunnel keeps the Engine's device up.
	other, _ := wgnet.GenerateKey()
	_, err = f.svc.Ensure(ctx, f.device(t, "guid-r"), proto.VPNEnsureRequest{PublicKey: other.Public().String()})
	require.NoError(t, err)
	srv := tunnels.NewServer(f.svc, "replica-a", f.cipher.Unlocked, nil)
	require.NoError(t, srv.Reconcile(ctx))
	agent := agentPeer(t, key, ens)
	l, err := agent.ListenTCP(22)
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("SSH-2.0-x\r\n"))
			_ = c.Close()
		}
	}()
	require.Eventually(t, func() bool { _, err = srv.Probe(ctx, id.GUID, 22, time.Second); return err == nil },
		time.Minute, 100*time.Millisecond, "last: %v", err)

	_, err = f.store.DeviceTrustSet(ctx, db.DeviceTrustSetParams{TrustState: "quarantined", Now: time.Now(), Guid: id.GUID,
		FromState: "active", FromVersion: 1})
	require.NoError(t, err)
	_, err = srv.Probe(ctx, id.GUID, 22, 2*time.Second)
	require.Equal(t, tunnels.ECodeNoTunnel, cairn.ErrorCode(err), "refused at once: %v", err)
	require.Contains(t, srv.Peers(), key.Public().String())
	require.NoError(t, srv.Reconcile(ctx))
	require.NotContains(t, srv.Peers(), key.Public().String(), "the peer is dropped at the next reconcile")
	require.Contains(t, srv.Peers(), other.Public().String())
	srv.Close()
}

// One replica owns the Engine's key and port; another takes over only
// once the owner's lease lapsed or it let it go.
func TestOneOwnerAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, tunnels.Config{})
	id := f.device(t, "guid-o")
	key, err := wgnet.GenerateKey()
	require.NoError(t, err)
	_, err = f.svc.Ensure(ctx, id, proto.VPNEnsureRequest{PublicKey: key.Public().String()})
	require.NoError(t, err)
	a := tunnels.NewServer(f.svc, "replica-a", f.cipher.Unlocked, nil)
	b := tunnels.NewServer(f.svc, "replica-b", f.cipher.Unlocked, nil)
	require.NoError(t, a.Reconcile(ctx))
	require.NoError(t, b.Reconcile(ctx), "the second replica neither fails nor binds the port")
	require.True(t, a.Owner())
	require.False(t, b.Owner())
	_, err = b.Probe(ctx, id.GUID, 22, time.Second)
	require.Equal(t, tunnels.ECodeUnavailable, cairn.ErrorCode(err))

	a.Close()
	require.NoError(t, f.store.WireguardOwnerRelease(ctx, "replica-a"))
	require.NoError(t, b.Reconcile(ctx), "the port is free for the new owner")
	require.True(t, b.Owner())
	require.NoError(t, a.Reconcile(ctx))
	require.False(t, a.Owner())
	b.Close()
}

func TestEnsureValidates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, tunnels.Config{FallbackIP: netip.MustParseAddr("192.0.2.7"), Network: netip.MustParsePrefix("10.50.0.0/30")})
	id := f.device(t, "guid-v")
	for _, bad := range []string{"", "not base64!", "AAAA", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="} {
		_, err := f.svc.Ensure(ctx, id, proto.VPNEnsureRequest{PublicKey: bad})
		var ce *cairn.Error
		require.ErrorAs(t, err, &ce, bad)
		require.Equal(t, cairn.ECodeValidation, ce.Code, bad)
		require.Contains(t, ce.Fields, "public_key", bad)
	}
	key, _ := wgnet.GenerateKey()
	ens, err := f.svc.Ensure(ctx, id, proto.VPNEnsureRequest{PublicKey: key.Public().String()})
	require.NoError(t, err)
	require.Equal(t, netip.AddrPortFrom(netip.MustParseAddr("192.0.2.7"), uint16(f.port)).String(), ens.FallbackEndpoint)
	require.Equal(t, "10.50.0.2", ens.VirtualIP)

	// A /30 has one device address: the next device is refused.
	_, err = f.svc.Ensure(ctx, f.device(t, "guid-w"), proto.VPNEnsureRequest{PublicKey: key.Public().String()})
	require.Equal(t, tunnels.ECodeAddressesExhausted, cairn.ErrorCode(err))

	// Ready: only the current tunnel, and only with a handshake.
	_, err = f.svc.Ready(ctx, id, proto.VPNReadyRequest{TunnelID: "nope", Ready: true})
	var ce *cairn.Error
	require.ErrorAs(t, err, &ce)
	require.Contains(t, ce.Fields, "tunnel_id")
	require.Contains(t, ce.Fields, "last_handshake_at")
	now := time.Now()
	tun, err := f.svc.Ready(ctx, id, proto.VPNReadyRequest{TunnelID: ens.TunnelID, Ready: true, LastHandshakeAt: &now, Endpoint: "192.0.2.7:1"})
	require.NoError(t, err)
	require.True(t, tun.Ready)
	require.Equal(t, "192.0.2.7:1", tun.Endpoint)

	// The key is sealed: nothing stored is the key itself.
	row, err := f.store.WireguardServerGet(ctx)
	require.NoError(t, err)
	priv, err := f.svc.ServerKey(ctx)
	require.NoError(t, err)
	require.NotContains(t, string(row.PrivateSealed), string(priv[:]))
	require.Equal(t, priv.Public().String(), row.PublicKey)
	f.cipher.Lock()
	_, err = f.svc.ServerKey(ctx)
	require.Equal(t, tunnels.ECodeUnavailable, cairn.ErrorCode(err))
}
