package tunnels

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"golang.org/x/crypto/nacl/box"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto/wgnet"
	"github.com/cairn-rmm/cairn/db"
)

// Reach is how a process reaches a device's tunnel address: the
// in-process Server of the serve replica holding the WireGuard, or the
// client of a gateway process (internal/gateway) that holds it instead.
type Reach interface {
	// Dial opens a TCP connection to port on guid's tunnel address.
	Dial(ctx context.Context, guid cairn.DeviceGUID, port int) (net.Conn, error)
	// Available says whether tunnels can be reached from here now, and
	// why not.
	Available(ctx context.Context) (bool, string)
}

// Available is the in-process server's: it holds the owner lease.
func (s *Server) Available(context.Context) (bool, string) {
	if !s.Owner() {
		return false, "another Engine replica holds the WireGuard tunnels"
	}
	return true, ""
}

// ProbeThrough is a Probe through r: what the service on port says first.
func (s *Service) ProbeThrough(ctx context.Context, r Reach, guid cairn.DeviceGUID, port int, wait time.Duration) (Probe, error) {
	t, err := s.Get(ctx, guid)
	if err != nil {
		return Probe{}, err
	}
	p := Probe{VirtualIP: t.VirtualIP, Port: port}
	started := time.Now()
	dctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	c, err := r.Dial(dctx, guid, port)
	if err != nil {
		return p, err
	}
	defer c.Close()
	p.Reachable = true
	_ = c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, bannerMax)
	n, err := io.ReadFull(c, buf)
	p.Banner = string(buf[:n])
	p.BannerRead = err == nil || (n > 0 && errors.Is(err, io.ErrUnexpectedEOF))
	p.ElapsedMS = time.Since(started).Milliseconds()
	return p, nil
}

// GatewayHolderPrefix opens the owner lease's holder when a gateway
// process holds the WireGuard: "gateway:<Internal key ID>" (the key it
// signs with, which the Engine's requests to it derive from).
const GatewayHolderPrefix = "gateway:"

// GatewayConfig is what a gateway process needs to run the Engine's end
// of the tunnels (POST /api/internal/job-scheduler/vpn-prepare): the
// WireGuard private key sealed to the gateway's own X25519 key (NaCl
// anonymous box), never in clear, and the network.
type GatewayConfig struct {
	SealedPrivateKey string `json:"sealed_private_key"`
	PublicKey        string `json:"public_key"`
	EngineIP         string `json:"engine_ip"`
	Network          string `json:"network"`
	Port             int    `json:"port"`
	MTU              int    `json:"mtu"`
	// LeaseSeconds is how long the lease lasts without a vpn-sessions call.
	LeaseSeconds int `json:"lease_seconds"`
}

// GatewayPeer is one tunnel the gateway serves.
type GatewayPeer struct {
	DeviceGUID cairn.DeviceGUID `json:"device_guid"`
	PublicKey  string           `json:"public_key"`
	VirtualIP  string           `json:"virtual_ip"`
}

// GatewayHandshake is a peer's latest handshake as the gateway saw it.
type GatewayHandshake struct {
	PublicKey string    `json:"public_key"`
	At        time.Time `json:"at"`
}

// claimForGateway takes or renews the owner lease for the gateway
// signing with keyID.
func (s *Service) claimForGateway(ctx context.Context, keyID string) error {
	holder := GatewayHolderPrefix + keyID
	got, err := s.store.WireguardOwnerClaim(ctx, db.WireguardOwnerClaimParams{Replica: holder, TtlSeconds: LeaseTTL.Seconds()})
	if db.IsNoRows(err) || (err == nil && got != holder) {
		return cairn.Errorf(ECodeUnavailable, "another Engine replica or gateway holds the WireGuard tunnels; retry once its lease lapses")
	}
	return err
}

// PrepareGateway gives the gateway signing with keyID the owner lease
// and the Engine's WireGuard key sealed to boxKey (base64 X25519).
func (s *Service) PrepareGateway(ctx context.Context, keyID, boxKey string) (GatewayConfig, error) {
	raw, err := base64.StdEncoding.DecodeString(boxKey)
	if err != nil || len(raw) != 32 {
		return GatewayConfig{}, cairn.Invalid("public_key", "must be a base64 X25519 public key")
	}
	if err := s.claimForGateway(ctx, keyID); err != nil {
		return GatewayConfig{}, err
	}
	key, err := s.ServerKey(ctx)
	if err != nil {
		return GatewayConfig{}, err
	}
	var pub [32]byte
	copy(pub[:], raw)
	sealed, err := box.SealAnonymous(nil, key[:], &pub, rand.Reader)
	if err != nil {
		return GatewayConfig{}, err
	}
	return GatewayConfig{SealedPrivateKey: base64.StdEncoding.EncodeToString(sealed), PublicKey: key.Public().String(),
		EngineIP: s.EngineIP().String(), Network: s.cfg.Network.String(), Port: s.cfg.Port, MTU: s.cfg.MTU,
		LeaseSeconds: int(LeaseTTL.Seconds())}, nil
}

// OpenGatewayKey opens PrepareGateway's sealed key with the gateway's
// key pair.
func OpenGatewayKey(sealed string, public, private *[32]byte) (wgnet.Key, error) {
	raw, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil {
		return wgnet.Key{}, err
	}
	plain, ok := box.OpenAnonymous(nil, raw, public, private)
	if !ok || len(plain) != len(wgnet.Key{}) {
		return wgnet.Key{}, errors.New("the WireGuard key was not sealed to this gateway's key")
	}
	var k wgnet.Key
	copy(k[:], plain)
	return k, nil
}

// GatewaySessions renews the gateway's lease, records the handshakes it
// saw and answers the peers it serves: every trusted device's tunnel, as
// the in-process server's (Server.Reconcile).
func (s *Service) GatewaySessions(ctx context.Context, keyID string, hs []GatewayHandshake) ([]GatewayPeer, error) {
	if err := s.claimForGateway(ctx, keyID); err != nil {
		return nil, err
	}
	if len(hs) > 0 {
		keys := make([]string, 0, len(hs))
		ats := make([]time.Time, 0, len(hs))
		for _, h := range hs {
			keys = append(keys, h.PublicKey)
			ats = append(ats, h.At)
		}
		if err := s.store.TunnelHandshakes(ctx, db.TunnelHandshakesParams{PublicKeys: keys, Ats: ats}); err != nil {
			return nil, err
		}
	}
	rows, err := s.store.TunnelListActive(ctx)
	if err != nil {
		return nil, err
	}
	peers := make([]GatewayPeer, 0, len(rows))
	byKey := map[wgnet.Key]bool{}
	for _, r := range rows {
		k, err := wgnet.ParseKey(r.Tunnel.AgentPublicKey)
		if err != nil || byKey[k] {
			continue
		}
		byKey[k] = true
		peers = append(peers, GatewayPeer{DeviceGUID: r.Tunnel.DeviceGuid, PublicKey: k.String(), VirtualIP: s.addrAt(r.Tunnel.IpOffset).String()})
	}
	return peers, nil
}

// GatewayHolder is the Internal key ID of the gateway process holding a
// live owner lease, or "" when none does.
func (s *Service) GatewayHolder(ctx context.Context) (string, error) {
	o, err := s.store.WireguardOwnerGet(ctx)
	if db.IsNoRows(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	id, ok := strings.CutPrefix(o.Replica, GatewayHolderPrefix)
	if !ok || !o.Live {
		return "", nil
	}
	return id, nil
}
