package tunnels

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto/wgnet"
)

// wgQuickBackend is a host interface brought up by wg-quick: kernel
// WireGuard, or wireguard-go where the kernel has none (wg-quick falls
// back to it by itself).
type wgQuickBackend struct {
	dir    string
	iface  string
	tools  *Tools
	server wgnet.Key
}

func (b *wgQuickBackend) conf() string { return filepath.Join(b.dir, b.iface+".conf") }

func (b *wgQuickBackend) up(ctx context.Context, c upConfig) (string, error) {
	server, err := wgnet.ParseKey(c.Ensure.ServerPublicKey)
	if err != nil {
		return "", fmt.Errorf("the Engine's key: %w", err)
	}
	b.server = server
	conf := fmt.Sprintf("[Interface]\nPrivateKey = %s\nAddress = %s/32\nMTU = %d\n\n[Peer]\nPublicKey = %s\nEndpoint = %s\nAllowedIPs = %s/32\nPersistentKeepalive = %d\n",
		c.Key, c.Ensure.VirtualIP, c.Ensure.MTU, server, c.Ensure.Endpoint, c.Ensure.EngineIP, c.Ensure.PersistentKeepalive)
	if err := os.MkdirAll(b.dir, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(b.conf(), []byte(conf), 0o600); err != nil {
		return "", err
	}
	if _, err := b.tools.run(ctx, "ip", "link", "show", "dev", b.iface); err == nil {
		// Configured before (an earlier cycle or run): start afresh.
		_, _ = b.tools.run(ctx, "wg-quick", "down", b.conf())
	}
	out, err := b.tools.run(ctx, "wg-quick", "up", b.conf())
	if err != nil {
		return "", fmt.Errorf("wg-quick up: %v: %s", err, shortErr(out))
	}
	if strings.Contains(string(out), "userspace implementation") {
		return ModeWireguardGo, nil
	}
	return ModeKernel, nil
}

func (b *wgQuickBackend) setEndpoint(ctx context.Context, endpoint string) error {
	out, err := b.tools.run(ctx, "wg", "set", b.iface, "peer", b.server.String(), "endpoint", endpoint)
	if err != nil {
		return fmt.Errorf("wg set endpoint %s: %v: %s", endpoint, err, shortErr(out))
	}
	return nil
}

func (b *wgQuickBackend) handshake() (time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := b.tools.run(ctx, "wg", "show", b.iface, "latest-handshakes")
	if err != nil {
		return time.Time{}, fmt.Errorf("wg show: %v: %s", err, shortErr(out))
	}
	return parseLatestHandshakes(string(out), b.server), nil
}

// parseLatestHandshakes reads `wg show <iface> latest-handshakes` for
// peer (zero: none yet).
func parseLatestHandshakes(out string, peer wgnet.Key) time.Time {
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || f[0] != peer.String() {
			continue
		}
		sec, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || sec == 0 {
			return time.Time{}
		}
		return time.Unix(sec, 0).UTC()
	}
	return time.Time{}
}

func (b *wgQuickBackend) nudge(engineIP string) {
	c, err := net.DialTimeout("udp", net.JoinHostPort(engineIP, "9"), time.Second)
	if err != nil {
		return
	}
	_, _ = c.Write([]byte{0})
	_ = c.Close()
}

func (b *wgQuickBackend) down() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := b.tools.run(ctx, "wg-quick", "down", b.conf())
	if err != nil {
		return fmt.Errorf("wg-quick down: %v: %s", err, shortErr(out))
	}
	return nil
}

func (b *wgQuickBackend) inProcess() bool { return false }
