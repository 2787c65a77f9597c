package tunnels

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/proto/wgnet"
	"github.com/cairn-rmm/cairn/db"
)

// Owner lease timing: the owner renews every LeaseRenew; a replica takes
// over once LeaseTTL passed without a renewal.
const (
	LeaseRenew = 5 * time.Second
	LeaseTTL   = 20 * time.Second
)

// Server is the Engine's end of every tunnel: one user-space WireGuard
// device (agent/proto/wgnet) on the replica holding the owner lease.
// Each replica runs one; only the owner binds the UDP port, and only
// once a tunnel exists. Its peers follow the tunnels table: every
// trusted device's tunnel, its agent's key allowed exactly its /32.
type Server struct {
	svc      *Service
	replica  string
	unlocked func() bool
	changes  <-chan struct{}

	mu    sync.Mutex
	dev   *wgnet.Device
	owner bool
}

// NewServer returns replica's server; changes receives a value when the
// peers may have changed (the bus's ControlTunnels), unlocked says
// whether the master cipher is (the Engine's key needs it).
func NewServer(svc *Service, replica string, unlocked func() bool, changes <-chan struct{}) *Server {
	return &Server{svc: svc, replica: replica, unlocked: unlocked, changes: changes}
}

// Run keeps the lease and the device until ctx ends, then frees both.
func (s *Server) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			s.stop()
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = s.svc.store.WireguardOwnerRelease(rctx, s.replica)
			cancel()
			return
		case <-timer.C:
		case <-s.changes:
		}
		if err := s.Reconcile(ctx); err != nil && ctx.Err() == nil {
			s.svc.log.Warn("tunnel reconcile failed; retrying", "err", err)
		}
		timer.Reset(LeaseRenew)
	}
}

// Reconcile claims or renews the lease and makes the device what the
// table says: its peers, or no device when there is nothing to serve
// (not the owner, the cipher locked, no tunnels).
func (s *Server) Reconcile(ctx context.Context) error {
	if !s.unlocked() {
		s.stop()
		return nil
	}
	holder, err := s.svc.store.WireguardOwnerClaim(ctx, db.WireguardOwnerClaimParams{Replica: s.replica, TtlSeconds: LeaseTTL.Seconds()})
	if err != nil && !db.IsNoRows(err) {
		return err
	}
	owner := err == nil && holder == s.replica
	s.mu.Lock()
	s.owner = owner
	s.mu.Unlock()
	if !owner {
		s.stop()
		return nil
	}
	rows, err := s.svc.store.TunnelListActive(ctx)
	if err != nil {
		return err
	}
	dev, err := s.device(ctx, len(rows) > 0)
	if err != nil || dev == nil {
		return err
	}
	peers := make([]wgnet.Peer, 0, len(rows))
	byKey := map[wgnet.Key]bool{}
	for _, r := range rows {
		k, err := wgnet.ParseKey(r.Tunnel.AgentPublicKey)
		if err != nil || byKey[k] {
			continue // a key two devices claim serves neither until re-ensured
		}
		byKey[k] = true
		peers = append(peers, wgnet.Peer{PublicKey: k, AllowedIP: s.svc.addrAt(r.Tunnel.IpOffset)})
	}
	if err := dev.SetPeers(peers); err != nil {
		return err
	}
	return s.recordHandshakes(ctx, dev)
}

// device starts the device when wanted (and not yet running), or stops
// it when not.
func (s *Server) device(ctx context.Context, want bool) (*wgnet.Device, error) {
	s.mu.Lock()
	dev := s.dev
	s.mu.Unlock()
	if !want {
		s.stop()
		return nil, nil
	}
	if dev != nil {
		return dev, nil
	}
	key, err := s.svc.ServerKey(ctx)
	if err != nil {
		return nil, err
	}
	dev, err = wgnet.Start(wgnet.Config{PrivateKey: key, Address: s.svc.EngineIP(), ListenPort: s.svc.cfg.Port, MTU: s.svc.cfg.MTU,
		Logf: func(f string, a ...any) { s.svc.log.Debug("wireguard: " + fmt.Sprintf(f, a...)) }})
	if err != nil {
		return nil, err
	}
	s.svc.log.Info("WireGuard up", "replica", s.replica, "port", s.svc.cfg.Port, "engine_ip", s.svc.EngineIP())
	s.mu.Lock()
	s.dev = dev
	s.mu.Unlock()
	return dev, nil
}

func (s *Server) stop() {
	s.mu.Lock()
	dev := s.dev
	s.dev = nil
	s.mu.Unlock()
	if dev != nil {
		dev.Close()
		s.svc.log.Info("WireGuard down", "replica", s.replica)
	}
}

// recordHandshakes stores what the device saw of each peer.
func (s *Server) recordHandshakes(ctx context.Context, dev *wgnet.Device) error {
	hs, err := dev.Handshakes()
	if err != nil || len(hs) == 0 {
		return err
	}
	keys := make([]string, 0, len(hs))
	ats := make([]time.Time, 0, len(hs))
	for k, at := range hs {
		keys = append(keys, k.String())
		ats = append(ats, at)
	}
	return s.svc.store.TunnelHandshakes(ctx, db.TunnelHandshakesParams{PublicKeys: keys, Ats: ats})
}

// Owner reports whether this replica holds the lease (as of its last
// check).
func (s *Server) Owner() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owner
}

// running is the device, or the reason there is none here.
func (s *Server) running() (*wgnet.Device, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dev != nil {
		return s.dev, nil
	}
	if !s.owner {
		return nil, cairn.Errorf(ECodeUnavailable, "another Engine replica serves the tunnels (or none yet); try again")
	}
	return nil, cairn.Errorf(ECodeUnavailable, "the Engine's WireGuard is not up yet; try again")
}

// Probe is a TCP connection to port on the device's tunnel address,
// through the tunnel: it reads what the service says first (at most
// bannerMax bytes, e.g. an RFB banner) within wait.
type Probe struct {
	Reachable  bool   `json:"reachable"`
	Banner     string `json:"banner"`
	ElapsedMS  int64  `json:"elapsed_ms"`
	VirtualIP  string `json:"virtual_ip"`
	Port       int    `json:"port"`
	BannerRead bool   `json:"banner_read"`
}

const bannerMax = 12

// Probe connects to guid's tunnel address on port.
func (s *Server) Probe(ctx context.Context, guid cairn.DeviceGUID, port int, wait time.Duration) (Probe, error) {
	return s.svc.ProbeThrough(ctx, s, guid, port, wait)
}

// Dial opens a TCP connection to port on guid's tunnel address, through
// this replica's WireGuard (the remote desktop gateway's path to the
// agent's VNC server). Only the owner replica can: elsewhere it answers
// tunnel_unavailable.
func (s *Server) Dial(ctx context.Context, guid cairn.DeviceGUID, port int) (net.Conn, error) {
	t, err := s.svc.Get(ctx, guid)
	if err != nil {
		return nil, err
	}
	if t.TrustState != "active" {
		return nil, cairn.Errorf(ECodeNoTunnel, "the device is %s: its tunnel is torn down", t.TrustState)
	}
	dev, err := s.running()
	if err != nil {
		return nil, err
	}
	c, err := dev.DialTCP(ctx, netip.AddrPortFrom(netip.MustParseAddr(t.VirtualIP), uint16(port)))
	if err != nil {
		return nil, cairn.Errorf(ECodeUnreachable, "TCP %s:%d through the tunnel: %v", t.VirtualIP, port, err)
	}
	return c, nil
}

// Fresh reports whether t's last handshake is recent enough to count.
func Fresh(t Tunnel, now time.Time) bool {
	return t.LastHandshakeAt != nil && now.Sub(*t.LastHandshakeAt) < proto.HandshakeFresh
}

// Close stops the device (the lease lapses on its own).
func (s *Server) Close() { s.stop() }

// Peers are the public keys this replica's device serves (none when it
// runs no device).
func (s *Server) Peers() []string {
	s.mu.Lock()
	dev := s.dev
	s.mu.Unlock()
	if dev == nil {
		return nil
	}
	var out []string
	for _, k := range dev.Peers() {
		out = append(out, k.String())
	}
	return out
}
