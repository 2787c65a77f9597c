package tunnels

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto/wgnet"
)

// netstackBackend runs the agent's end inside the agent process (wgnet):
// no driver, no interface on the host; only what the agent itself
// listens on through the device is reachable from the Engine.
type netstackBackend struct {
	mu     sync.Mutex
	dev    *wgnet.Device
	server wgnet.Peer
	// want is the forwarded ports (port: local target) and relays their
	// listeners on dev (relay.go).
	want   map[int]string
	relays map[int]*relay
	log    *slog.Logger
}

func (b *netstackBackend) up(_ context.Context, c upConfig) (string, error) {
	server, err := wgnet.ParseKey(c.Ensure.ServerPublicKey)
	if err != nil {
		return "", fmt.Errorf("the Engine's key: %w", err)
	}
	addr, err := netip.ParseAddr(c.Ensure.VirtualIP)
	if err != nil {
		return "", fmt.Errorf("virtual_ip: %w", err)
	}
	engine, err := netip.ParseAddr(c.Ensure.EngineIP)
	if err != nil {
		return "", fmt.Errorf("engine_ip: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dev != nil {
		old := b.dev
		b.dev = nil
		_ = b.syncRelays()
		old.Close()
	}
	dev, err := wgnet.Start(wgnet.Config{PrivateKey: c.Key, Address: addr, MTU: c.Ensure.MTU})
	if err != nil {
		return "", err
	}
	b.server = wgnet.Peer{PublicKey: server, AllowedIP: engine, Endpoint: c.Ensure.Endpoint, Keepalive: c.Ensure.PersistentKeepalive}
	if err := dev.SetPeers([]wgnet.Peer{b.server}); err != nil {
		dev.Close()
		return "", err
	}
	b.dev = dev
	if err := b.syncRelays(); err != nil {
		b.logger().Warn("relay a forwarded port on the tunnel", "err", err)
	}
	return ModeNetstack, nil
}

func (b *netstackBackend) setEndpoint(_ context.Context, endpoint string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dev == nil {
		return fmt.Errorf("the tunnel is not up")
	}
	p := b.server
	p.Endpoint = endpoint
	// A new peer starts its handshake at once, where a changed endpoint
	// would wait out the pending one's retry timer.
	if err := b.dev.SetPeers(nil); err != nil {
		return err
	}
	if err := b.dev.SetPeers([]wgnet.Peer{p}); err != nil {
		return err
	}
	b.server = p
	return nil
}

func (b *netstackBackend) handshake() (time.Time, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dev == nil {
		return time.Time{}, fmt.Errorf("the tunnel is not up")
	}
	hs, err := b.dev.Handshakes()
	if err != nil {
		return time.Time{}, err
	}
	return hs[b.server.PublicKey], nil
}

func (b *netstackBackend) nudge(engineIP string) {
	b.mu.Lock()
	dev := b.dev
	b.mu.Unlock()
	if a, err := netip.ParseAddr(engineIP); err == nil && dev != nil {
		dev.Nudge(a)
	}
}

func (b *netstackBackend) down() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dev != nil {
		old := b.dev
		b.dev = nil
		_ = b.syncRelays()
		old.Close()
	}
	return nil
}

func (b *netstackBackend) inProcess() bool { return true }

// listenTCP listens on the device's address (the in-process tunnel only).
func (b *netstackBackend) listenTCP(port int) (net.Listener, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dev == nil {
		return nil, fmt.Errorf("the tunnel is not up")
	}
	return b.dev.ListenTCP(port)
}
