// Package wgnet is WireGuard in user space over gVisor's netstack
// (golang.zx2c4.com/wireguard with tun/netstack): no root, no kernel
// module, no interface on the host. The Engine runs its end of every
// device tunnel on one such device (internal/tunnels); an agent that
// cannot create an interface may run its end on one too. Keys are the
// WireGuard tools' base64 form. It lives under agent/proto because it
// is shared by both binaries, and agent/proto is the one subtree they share
// (TestEngineImportsOnlyAgentProto).
package wgnet

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/curve25519"
	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun/netstack"
)

// KeyLen is the length of a WireGuard key.
const KeyLen = 32

// Key is a WireGuard (Curve25519) key.
type Key [KeyLen]byte

// GenerateKey makes a new private key, clamped as `wg genkey` does.
func GenerateKey() (Key, error) {
	var k Key
	if _, err := rand.Read(k[:]); err != nil {
		return k, err
	}
	k[0] &= 248
	k[31] = (k[31] & 127) | 64
	return k, nil
}

// Public is the public key of private key k (`wg pubkey`).
func (k Key) Public() Key {
	var pub Key
	out, err := curve25519.X25519(k[:], curve25519.Basepoint)
	if err != nil {
		// Only a low-order input fails, which a clamped key never is.
		panic(err)
	}
	copy(pub[:], out)
	return pub
}

// String is the key's base64 form, as wg prints it.
func (k Key) String() string { return base64.StdEncoding.EncodeToString(k[:]) }

// Hex is the UAPI form.
func (k Key) Hex() string { return hex.EncodeToString(k[:]) }

// IsZero reports an unset key.
func (k Key) IsZero() bool { return k == Key{} }

// ParseKey reads a base64 key.
func ParseKey(s string) (Key, error) {
	var k Key
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != KeyLen {
		return k, errors.New("must be a WireGuard key: 32 bytes in base64")
	}
	copy(k[:], b)
	if k.IsZero() {
		return k, errors.New("must not be the all-zero key")
	}
	return k, nil
}

// Peer is one peer of a Device: its key, the one address it may use in
// the tunnel, and optionally where to reach it.
type Peer struct {
	PublicKey Key
	AllowedIP netip.Addr // exactly this /32
	Endpoint  string     // host:port; "" to learn it from the peer
	Keepalive int        // seconds; 0 none
}

// Config is a Device's own side.
type Config struct {
	PrivateKey Key
	Address    netip.Addr // its address in the tunnel
	ListenPort int        // 0: any (a client)
	MTU        int
	// Verbose logs WireGuard's own messages through Logf.
	Logf func(format string, args ...any)
}

// Device is a running user-space WireGuard device with its own TCP/IP
// stack: connections to peers are made through Dial.
type Device struct {
	dev  *device.Device
	net  *netstack.Net
	addr netip.Addr

	mu    sync.Mutex
	peers map[Key]Peer
}

// Start brings a device up: it binds its UDP port at once, so a port in
// use fails here.
func Start(cfg Config) (*Device, error) {
	if cfg.MTU == 0 {
		cfg.MTU = 1420
	}
	tdev, tnet, err := netstack.CreateNetTUN([]netip.Addr{cfg.Address}, nil, cfg.MTU)
	if err != nil {
		return nil, fmt.Errorf("netstack: %w", err)
	}
	logger := &device.Logger{Verbosef: device.DiscardLogf, Errorf: device.DiscardLogf}
	if cfg.Logf != nil {
		logger = &device.Logger{Verbosef: device.DiscardLogf, Errorf: cfg.Logf}
	}
	dev := device.NewDevice(tdev, conn.NewDefaultBind(), logger)
	uapi := fmt.Sprintf("private_key=%s\nlisten_port=%d\n", cfg.PrivateKey.Hex(), cfg.ListenPort)
	if err := dev.IpcSet(uapi); err != nil {
		dev.Close()
		return nil, fmt.Errorf("configure WireGuard: %w", err)
	}
	if err := dev.Up(); err != nil {
		dev.Close()
		return nil, fmt.Errorf("WireGuard up (UDP port %d): %w", cfg.ListenPort, err)
	}
	return &Device{dev: dev, net: tnet, addr: cfg.Address, peers: map[Key]Peer{}}, nil
}

// Close stops the device and frees its port.
func (d *Device) Close() { d.dev.Close() }

// Address is the device's own tunnel address.
func (d *Device) Address() netip.Addr { return d.addr }

// ListenPort is the UDP port the device is bound to.
func (d *Device) ListenPort() int {
	s, err := d.dev.IpcGet()
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(s, "\n") {
		if v, ok := strings.CutPrefix(line, "listen_port="); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// SetPeers makes the device's peers exactly want: new and changed ones
// are (re)configured, missing ones removed; unchanged peers keep their
// sessions.
func (d *Device) SetPeers(want []Peer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	seen := map[Key]bool{}
	for _, p := range want {
		seen[p.PublicKey] = true
		if old, ok := d.peers[p.PublicKey]; ok && old == p {
			continue
		}
		fmt.Fprintf(&b, "public_key=%s\nreplace_allowed_ips=true\nallowed_ip=%s/32\npersistent_keepalive_interval=%d\n",
			p.PublicKey.Hex(), p.AllowedIP, p.Keepalive)
		if p.Endpoint != "" {
			ap, err := resolve(p.Endpoint)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "endpoint=%s\n", ap)
		}
	}
	for k := range d.peers {
		if !seen[k] {
			fmt.Fprintf(&b, "public_key=%s\nremove=true\n", k.Hex())
		}
	}
	if b.Len() > 0 {
		if err := d.dev.IpcSet(b.String()); err != nil {
			return fmt.Errorf("configure peers: %w", err)
		}
	}
	d.peers = make(map[Key]Peer, len(want))
	for _, p := range want {
		d.peers[p.PublicKey] = p
	}
	return nil
}

// resolve turns host:port into an IP and port (UAPI takes no names).
func resolve(endpoint string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(endpoint); err == nil {
		return ap, nil
	}
	ua, err := net.ResolveUDPAddr("udp", endpoint)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("endpoint %s: %w", endpoint, err)
	}
	return ua.AddrPort(), nil
}

// Handshakes are the latest handshake of every peer that had one.
func (d *Device) Handshakes() (map[Key]time.Time, error) {
	s, err := d.dev.IpcGet()
	if err != nil {
		return nil, err
	}
	return ParseHandshakes(s), nil
}

// ParseHandshakes reads the peers' latest handshakes from UAPI get output.
func ParseHandshakes(uapi string) map[Key]time.Time {
	out := map[Key]time.Time{}
	var cur Key
	var have bool
	var sec, nsec int64
	flush := func() {
		if have && sec > 0 {
			out[cur] = time.Unix(sec, nsec).UTC()
		}
	}
	sc := bufio.NewScanner(strings.NewReader(uapi))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		switch k {
		case "public_key":
			flush()
			b, err := hex.DecodeString(v)
			have = err == nil && len(b) == KeyLen
			if have {
				copy(cur[:], b)
			}
			sec, nsec = 0, 0
		case "last_handshake_time_sec":
			sec, _ = strconv.ParseInt(v, 10, 64)
		case "last_handshake_time_nsec":
			nsec, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	flush()
	return out
}

// DialTCP connects to addr through the tunnel.
func (d *Device) DialTCP(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
	return d.net.DialContextTCPAddrPort(ctx, addr)
}

// ListenTCP listens on the device's own address.
func (d *Device) ListenTCP(port int) (net.Listener, error) {
	return d.net.ListenTCPAddrPort(netip.AddrPortFrom(d.addr, uint16(port)))
}

// Nudge sends one UDP packet to addr's discard port through the tunnel,
// which makes WireGuard start a handshake if it has none.
func (d *Device) Nudge(addr netip.Addr) {
	c, err := d.net.DialUDPAddrPort(netip.AddrPort{}, netip.AddrPortFrom(addr, 9))
	if err != nil {
		return
	}
	_, _ = c.Write([]byte{0})
	_ = c.Close()
}

// Peers are the configured peers' public keys.
func (d *Device) Peers() []Key {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Key, 0, len(d.peers))
	for k := range d.peers {
		out = append(out, k)
	}
	return out
}
