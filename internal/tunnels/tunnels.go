// Package tunnels is the managed WireGuard tunnel between the Engine and
// each device's agent (issue 23; SPEC agent behaviour 9, "Remote desktop,
// shell, tunnel"): the Engine's key pair sealed by the master cipher, one
// persistent tunnel per device with its address in the tunnel network,
// the agent's ensure and ready calls, and teardown on quarantine, revoke
// and purge. The Engine's end of every tunnel runs in user space on the
// one replica that holds the owner lease (Server, server.go).
package tunnels

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/proto/wgnet"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// Error codes.
const (
	// ECodeNoTunnel: the device has no tunnel (never asked, or torn down).
	ECodeNoTunnel = "tunnel_not_found"
	// ECodeNotReady: the tunnel exists but the agent has not reported it
	// ready with a fresh handshake (retryable: establishment waits on it).
	ECodeNotReady = "tunnel_not_ready"
	// ECodeUnavailable: this replica cannot reach tunnels now (another
	// replica owns the Engine's WireGuard, or the cipher is locked).
	ECodeUnavailable = "tunnel_unavailable"
	// ECodeAddressesExhausted: every address of the tunnel network is used.
	ECodeAddressesExhausted = "tunnel_addresses_exhausted"
	// ECodeUnreachable: the probe's TCP connection through the tunnel
	// failed.
	ECodeUnreachable = "tunnel_unreachable"
)

// ControlTunnels is the bus topic that tells the owner its peers changed.
const ControlTunnels = "tunnels"

// Defaults.
const (
	DefaultPort    = 51820
	DefaultNetwork = "10.213.0.0/16"
	DefaultMTU     = 1420
)

// Config is the tunnel network and how agents reach the Engine.
type Config struct {
	// Port is the Engine's UDP port (CAIRN_WIREGUARD_PORT).
	Port int
	// Endpoint is host:port agents dial (CAIRN_WIREGUARD_ENDPOINT); ""
	// is PublicURL's host with Port.
	Endpoint string
	// FallbackIP is the non-loopback IP agents try after FallbackWait
	// without a handshake (CAIRN_WIREGUARD_FALLBACK_IP); none when invalid.
	FallbackIP netip.Addr
	// Network holds every tunnel address; the Engine's is its first host.
	Network netip.Prefix
	MTU     int
	// PublicURL is the Engine's public address.
	PublicURL string
}

// Service is the tunnels' domain.
type Service struct {
	store  *db.Store
	cipher *aegis.Cipher
	signal func(ctx context.Context) error
	cfg    Config
	log    *slog.Logger
}

// New returns the service; signal tells every replica the peers changed.
func New(store *db.Store, cipher *aegis.Cipher, signal func(context.Context) error, cfg Config, log *slog.Logger) (*Service, error) {
	cfg.Port = cmp.Or(cfg.Port, DefaultPort)
	cfg.MTU = cmp.Or(cfg.MTU, DefaultMTU)
	if !cfg.Network.IsValid() {
		cfg.Network = netip.MustParsePrefix(DefaultNetwork)
	}
	if !cfg.Network.Addr().Is4() || cfg.Network.Bits() > 30 || cfg.Network.Bits() < 8 {
		return nil, fmt.Errorf("tunnel network %s: must be an IPv4 prefix of /8 to /30", cfg.Network)
	}
	cfg.Network = cfg.Network.Masked()
	if cfg.FallbackIP.IsValid() && (cfg.FallbackIP.IsLoopback() || cfg.FallbackIP.IsUnspecified()) {
		return nil, fmt.Errorf("tunnel fallback IP %s: must not be a loopback or unspecified address", cfg.FallbackIP)
	}
	if cfg.Endpoint == "" {
		host := "localhost"
		if u, err := url.Parse(cfg.PublicURL); err == nil && u.Hostname() != "" {
			host = u.Hostname()
		}
		cfg.Endpoint = net.JoinHostPort(host, strconv.Itoa(cfg.Port))
	}
	if signal == nil {
		signal = func(context.Context) error { return nil }
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, cipher: cipher, signal: signal, cfg: cfg, log: log}, nil
}

// Config is the service's configuration, defaults filled in.
func (s *Service) Config() Config { return s.cfg }

// EngineIP is the Engine's tunnel address.
func (s *Service) EngineIP() netip.Addr { return s.cfg.Network.Addr().Next() }

// maxOffset is the last usable host offset of the network.
func (s *Service) maxOffset() int32 {
	size := int64(1) << (32 - s.cfg.Network.Bits())
	return int32(min(size-2, 1<<31-1))
}

// addrAt is network base + offset.
func (s *Service) addrAt(offset int32) netip.Addr {
	b := s.cfg.Network.Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(offset)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// Tunnel is one device's tunnel.
type Tunnel struct {
	DeviceGUID      cairn.DeviceGUID `json:"device_guid"`
	Hostname        string           `json:"hostname"`
	SiteID          int64            `json:"site_id"`
	TunnelID        string           `json:"tunnel_id"`
	VirtualIP       string           `json:"virtual_ip"`
	EngineIP        string           `json:"engine_ip"`
	AgentPublicKey  string           `json:"agent_public_key"`
	Endpoint        string           `json:"endpoint,omitempty"`
	CreatedAt       time.Time        `json:"created_at"`
	EnsuredAt       time.Time        `json:"ensured_at"`
	ReadyAt         *time.Time       `json:"ready_at"`
	LastHandshakeAt *time.Time       `json:"last_handshake_at"`
	LastError       string           `json:"last_error,omitempty"`
	// Ready: the agent reported it ready after its last ensure.
	Ready bool `json:"ready"`
	// TrustState is the device's; only an active device's tunnel has a
	// peer on the Engine.
	TrustState string `json:"trust_state"`
}

func (s *Service) tunnel(t db.Tunnel, siteID int64, hostname string) Tunnel {
	return Tunnel{DeviceGUID: t.DeviceGuid, Hostname: hostname, SiteID: siteID, TunnelID: t.TunnelID,
		VirtualIP: s.addrAt(t.IpOffset).String(), EngineIP: s.EngineIP().String(), AgentPublicKey: t.AgentPublicKey,
		Endpoint: t.EndpointUsed, CreatedAt: t.CreatedAt, EnsuredAt: t.EnsuredAt, ReadyAt: t.ReadyAt,
		LastHandshakeAt: t.LastHandshakeAt, LastError: t.LastError,
		Ready: t.ReadyAt != nil && !t.ReadyAt.Before(t.EnsuredAt)}
}

// ServerKey is the Engine's key pair, made (and sealed) on first use.
func (s *Service) ServerKey(ctx context.Context) (wgnet.Key, error) {
	row, err := s.store.WireguardServerGet(ctx)
	if db.IsNoRows(err) {
		k, gerr := wgnet.GenerateKey()
		if gerr != nil {
			return wgnet.Key{}, gerr
		}
		kid := s.cipher.KeyID()
		sealed, serr := s.cipher.Seal(k[:], sealAAD)
		if serr != nil {
			return wgnet.Key{}, sealErr(serr)
		}
		if err := s.store.WireguardServerInsert(ctx, db.WireguardServerInsertParams{PrivateSealed: sealed, SealedKeyID: kid,
			PublicKey: k.Public().String()}); err != nil {
			return wgnet.Key{}, err
		}
		row, err = s.store.WireguardServerGet(ctx)
	}
	if err != nil {
		return wgnet.Key{}, err
	}
	plain, err := s.cipher.Open(row.PrivateSealed, sealAAD)
	if err != nil {
		return wgnet.Key{}, sealErr(err)
	}
	var k wgnet.Key
	copy(k[:], plain)
	return k, nil
}

// ServerPublicKey is the Engine's public key (made on first use).
func (s *Service) ServerPublicKey(ctx context.Context) (string, error) {
	row, err := s.store.WireguardServerGet(ctx)
	if err == nil {
		return row.PublicKey, nil
	}
	if !db.IsNoRows(err) {
		return "", err
	}
	k, err := s.ServerKey(ctx)
	if err != nil {
		return "", err
	}
	return k.Public().String(), nil
}

func sealErr(err error) error {
	if errors.Is(err, aegis.ErrLocked) {
		return cairn.Errorf(ECodeUnavailable, "the master cipher is locked; tunnels wait for it")
	}
	return err
}

// Ensure is the agent's POST /api/agent/vpn/ensure: its tunnel, made on
// first call (one per device, persistent), with the agent's current key.
func (s *Service) Ensure(ctx context.Context, id devicetrust.Identity, req proto.VPNEnsureRequest) (proto.VPNEnsureResponse, error) {
	var v cairn.Validation
	key, err := wgnet.ParseKey(req.PublicKey)
	if err != nil {
		v.Add("public_key", err.Error())
	}
	if err := v.Err(); err != nil {
		return proto.VPNEnsureResponse{}, err
	}
	serverPub, err := s.ServerPublicKey(ctx)
	if err != nil {
		return proto.VPNEnsureResponse{}, err
	}
	t, err := s.ensureRow(ctx, id.GUID, key.String())
	if err != nil {
		return proto.VPNEnsureResponse{}, err
	}
	if err := s.signal(ctx); err != nil {
		s.log.Warn("tunnel change not signalled; the owner picks it up at its next check", "err", err)
	}
	out := proto.VPNEnsureResponse{TunnelID: t.TunnelID, VirtualIP: s.addrAt(t.IpOffset).String(), EngineIP: s.EngineIP().String(),
		ServerPublicKey: serverPub, Endpoint: s.cfg.Endpoint, PersistentKeepalive: proto.PersistentKeepalive, MTU: s.cfg.MTU}
	if s.cfg.FallbackIP.IsValid() {
		out.FallbackEndpoint = net.JoinHostPort(s.cfg.FallbackIP.String(), strconv.Itoa(s.cfg.Port))
	}
	return out, nil
}

// ensureRow returns the device's tunnel with key, allocating the lowest
// free address for a new one (a concurrent allocation of the same
// address is retried).
func (s *Service) ensureRow(ctx context.Context, guid cairn.DeviceGUID, key string) (db.Tunnel, error) {
	for range 8 {
		t, err := s.store.TunnelEnsured(ctx, db.TunnelEnsuredParams{DeviceGuid: guid, AgentPublicKey: key})
		if err == nil {
			return t, nil
		}
		if !db.IsNoRows(err) {
			return db.Tunnel{}, err
		}
		free, err := s.store.TunnelFreeOffset(ctx, s.maxOffset())
		if err != nil {
			return db.Tunnel{}, err
		}
		if free == 0 {
			return db.Tunnel{}, cairn.Errorf(ECodeAddressesExhausted, "every address of the tunnel network %s is in use", s.cfg.Network)
		}
		t, err = s.store.TunnelInsert(ctx, db.TunnelInsertParams{DeviceGuid: guid, TunnelID: uuid.NewString(), IpOffset: free,
			AgentPublicKey: key})
		if err == nil {
			s.log.Info("tunnel allocated", "device", guid, "virtual_ip", s.addrAt(free))
			return t, nil
		}
		if !db.IsUniqueViolation(err, "") && !db.IsNoRows(err) {
			return db.Tunnel{}, err
		}
	}
	return db.Tunnel{}, cairn.Errorf(cairn.ECodeUnavailable, "the tunnel address could not be allocated; try again")
}

// Ready is the agent's POST /api/agent/vpn/ready.
func (s *Service) Ready(ctx context.Context, id devicetrust.Identity, req proto.VPNReadyRequest) (Tunnel, error) {
	var v cairn.Validation
	if _, err := uuid.Parse(req.TunnelID); err != nil {
		v.Add("tunnel_id", "must be the tunnel ID ensure answered")
	}
	if len(req.Endpoint) > 300 {
		v.Add("endpoint", "must be at most 300 characters")
	}
	if len(req.Error) > 2000 {
		v.Add("error", "must be at most 2000 characters")
	}
	if req.Ready && req.LastHandshakeAt == nil {
		v.Add("last_handshake_at", "is required when ready (readiness needs a peer handshake)")
	}
	if err := v.Err(); err != nil {
		return Tunnel{}, err
	}
	cur, err := s.store.TunnelGet(ctx, id.GUID)
	if err != nil {
		return Tunnel{}, db.NotFound(err, "this device has no tunnel; call /api/agent/vpn/ensure first")
	}
	if cur.Tunnel.TunnelID != req.TunnelID {
		return Tunnel{}, cairn.Invalid("tunnel_id", "is not this device's current tunnel")
	}
	var hs *time.Time
	if req.LastHandshakeAt != nil {
		at := req.LastHandshakeAt.UTC()
		hs = &at
	}
	t, err := s.store.TunnelReady(ctx, db.TunnelReadyParams{DeviceGuid: id.GUID, Ready: req.Ready, LastHandshakeAt: hs,
		EndpointUsed: req.Endpoint, LastError: req.Error})
	if err != nil {
		return Tunnel{}, db.NotFound(err, "the tunnel was torn down")
	}
	return s.tunnel(t, int64(cur.SiteID), cur.Hostname), nil
}

// Get is a device's tunnel.
func (s *Service) Get(ctx context.Context, guid cairn.DeviceGUID) (Tunnel, error) {
	r, err := s.store.TunnelGet(ctx, guid)
	if err != nil {
		return Tunnel{}, notFound(err)
	}
	t := s.tunnel(r.Tunnel, int64(r.SiteID), r.Hostname)
	t.TrustState = r.TrustState
	return t, nil
}

func notFound(err error) error {
	if db.IsNoRows(err) {
		return cairn.Errorf(ECodeNoTunnel, "the device has no tunnel")
	}
	return err
}

// Active are the tunnels of trusted devices in scope.
func (s *Service) Active(ctx context.Context, scope cairn.SiteScope) ([]Tunnel, error) {
	rows, err := s.store.TunnelListActiveBySites(ctx, scope.Column())
	if err != nil {
		return nil, err
	}
	out := make([]Tunnel, 0, len(rows))
	for _, r := range rows {
		t := s.tunnel(r.Tunnel, int64(r.SiteID), r.Hostname)
		t.TrustState = "active"
		out = append(out, t)
	}
	return out, nil
}

// TearDown removes a device's tunnel (quarantine, revoke; a purge removes
// it with the device): the owner drops the peer at once and the address
// is free again. It reports whether there was one.
func (s *Service) TearDown(ctx context.Context, guid cairn.DeviceGUID) (bool, error) {
	n, err := s.store.TunnelDelete(ctx, guid)
	if err != nil {
		return false, err
	}
	if err := s.signal(ctx); err != nil {
		s.log.Warn("tunnel teardown not signalled; the owner drops the peer at its next check", "err", err)
	}
	if n > 0 {
		s.log.Info("tunnel torn down", "device", guid)
	}
	return n > 0, nil
}

// sealAAD binds the sealed key to its column.
var sealAAD = []byte("wireguard_server.private_sealed")

// SealedColumns is the Engine key's column, for data-key rotation.
func SealedColumns() []aegis.Column {
	return []aegis.Column{{Names: []string{"wireguard_server.private_sealed"},
		Reseal: func(ctx context.Context, q *db.Queries, r *aegis.Resealer) error {
			rows, err := q.WireguardServerSealedList(ctx)
			if err != nil {
				return err
			}
			for _, row := range rows {
				v, changed, err := r.Reseal(row.PrivateSealed, sealAAD)
				if err != nil {
					return err
				}
				if changed {
					if err := q.WireguardServerSealedUpdate(ctx, db.WireguardServerSealedUpdateParams{PrivateSealed: v, SealedKeyID: r.KeyID()}); err != nil {
						return err
					}
				}
			}
			return nil
		}}}
}
