// Package tunnels is the agent's side of the managed WireGuard tunnel
// (SPEC agent behaviour 9; docs/agent.md "VPN tunnel"). On
// vpn_tunnel_start, and from then on at every start and health check,
// the agent ensures its tunnel with the Engine (/api/agent/vpn/ensure),
// brings its end up, waits for a handshake on the primary endpoint and
// then on fallback_endpoint (up to proto.FallbackWait each), and reports
// /api/agent/vpn/ready with the system:vpn_tunnel role row. Tunnels are
// persistent: nothing stops one.
//
// Linux agents use wg-quick (kernel WireGuard, or wireguard-go where the
// kernel has none), installing wireguard-tools through the first package
// manager found, at most once per proto.InstallThrottle. Windows agents,
// and Linux agents told to (CAIRN_AGENT_WG_MODE=netstack), run the tunnel
// inside the agent process in user space (wgnet), with no interface on
// the host.
package tunnels

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/proto/wgnet"
	"github.com/cairn-rmm/cairn/agent/roles"
	agentruntime "github.com/cairn-rmm/cairn/agent/runtime"
)

// Environment overrides (tests, unusual hosts).
const (
	// EnvInterface names the interface (default DefaultInterface).
	EnvInterface = "CAIRN_AGENT_WG_INTERFACE"
	// EnvMode forces "netstack" (in-process) or "wg-quick".
	EnvMode = "CAIRN_AGENT_WG_MODE"
)

// DefaultInterface is the tunnel interface's name.
const DefaultInterface = "cairn-wg"

// Modes.
const (
	ModeKernel      = "kernel"
	ModeWireguardGo = "wireguard-go"
	ModeNetstack    = "netstack"
)

// healthEvery is how often a running tunnel is checked.
const healthEvery = 30 * time.Second

// Options configure the tunnel.
type Options struct {
	// Dir holds the private key, the wg-quick configuration and the
	// marker that the tunnel is wanted (<config dir>/wireguard).
	Dir string
	// Interface defaults to $CAIRN_AGENT_WG_INTERFACE or DefaultInterface;
	// Mode to $CAIRN_AGENT_WG_MODE, else netstack on Windows and wg-quick
	// elsewhere.
	Interface string
	Mode      string
	// Role is the system:vpn_tunnel role (nil: none reported).
	Role *roles.Role
	// AgentID is the agent's ID for the role's context.
	AgentID func() string
	Logger  *slog.Logger
	// Tools finds and installs wg and wg-quick (nil: the system's).
	Tools *Tools
	// FallbackWait overrides proto.FallbackWait (tests).
	FallbackWait time.Duration
	Now          func() time.Time
}

// Tunnel is the agent's tunnel.
type Tunnel struct {
	opts Options
	// auto: the mode was not forced, so a host where wg-quick cannot
	// create an interface falls back to the in-process tunnel.
	auto bool
	log  *slog.Logger

	cycle   sync.Mutex // one ensure cycle at a time
	mu      sync.Mutex
	call    agentruntime.Caller
	backend backend
	state   *proto.VPNTunnelStarted
	ens     *proto.VPNEnsureResponse
	loop    bool
	bg      context.Context
	// forwards are the ports relayed from the in-process tunnel's
	// address to local services (relay.go).
	forwards map[int]string
}

// New returns the tunnel; ctx bounds its background health checks.
func New(ctx context.Context, opts Options) *Tunnel {
	opts.Interface = cmp.Or(opts.Interface, os.Getenv(EnvInterface), DefaultInterface)
	opts.Mode = cmp.Or(opts.Mode, os.Getenv(EnvMode))
	auto := opts.Mode == ""
	if opts.Mode == "" {
		opts.Mode = "wg-quick"
		if runtime.GOOS == "windows" {
			opts.Mode = ModeNetstack
		}
	}
	opts.FallbackWait = cmp.Or(opts.FallbackWait, proto.FallbackWait)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.AgentID == nil {
		opts.AgentID = func() string { return "" }
	}
	if opts.Tools == nil {
		opts.Tools = &Tools{}
	}
	return &Tunnel{opts: opts, auto: auto, log: opts.Logger.With("component", "tunnel"), bg: ctx}
}

// Register adds the vpn_tunnel_start handler.
func (t *Tunnel) Register(h *agentruntime.Handlers) error {
	return h.Register(proto.EventVPNTunnelStart, t.handleStart)
}

// Session takes the Device caller of each connection loop; an agent whose
// tunnel was wanted before brings it back up.
func (t *Tunnel) Session(call agentruntime.Caller) {
	t.mu.Lock()
	t.call = call
	start := !t.loop && t.wanted()
	if start {
		t.loop = true
	}
	t.mu.Unlock()
	if start {
		go t.healthLoop()
	}
}

// Close takes a netstack tunnel down with the agent; a wg-quick interface
// stays up (it is the host's, and persistent).
func (t *Tunnel) Close() {
	t.mu.Lock()
	b := t.backend
	t.mu.Unlock()
	if b != nil && b.inProcess() {
		_ = b.down()
	}
}

func (t *Tunnel) handleStart(ctx context.Context, call agentruntime.Caller, _ json.RawMessage) (any, error) {
	if err := t.markWanted(); err != nil {
		return nil, fmt.Errorf("remember the tunnel: %w", err)
	}
	t.mu.Lock()
	t.call = call
	start := !t.loop
	t.loop = true
	t.mu.Unlock()
	st, err := t.Ensure(ctx, call)
	if start {
		go t.healthLoop()
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// healthLoop re-checks the tunnel, and brings it back when it fails,
// until the agent stops.
func (t *Tunnel) healthLoop() {
	first := true
	for {
		if !first {
			select {
			case <-t.bg.Done():
				return
			case <-time.After(healthEvery):
			}
		}
		t.mu.Lock()
		call := t.call
		t.mu.Unlock()
		if call == nil {
			first = false
			continue
		}
		ctx, cancel := context.WithTimeout(t.bg, 5*time.Minute)
		var err error
		if first || !t.healthy() {
			_, err = t.Ensure(ctx, call)
		} else {
			t.report(nil)
		}
		cancel()
		if err != nil && t.bg.Err() == nil {
			t.log.Warn("tunnel not up; retrying", "err", err)
		}
		first = false
	}
}

// healthy is a running tunnel with a fresh handshake.
func (t *Tunnel) healthy() bool {
	t.mu.Lock()
	b := t.backend
	t.mu.Unlock()
	if b == nil {
		return false
	}
	at, err := b.handshake()
	return err == nil && !at.IsZero() && t.opts.Now().Sub(at) < proto.HandshakeFresh
}

// Ensure runs one ensure cycle: tools, key, ensure, interface, handshake
// (primary, then fallback), ready. The role reports its outcome.
func (t *Tunnel) Ensure(ctx context.Context, call agentruntime.Caller) (*proto.VPNTunnelStarted, error) {
	t.cycle.Lock()
	defer t.cycle.Unlock()
	st, err := t.ensure(ctx, call)
	t.report(err)
	if call != nil {
		req := proto.VPNReadyRequest{Ready: err == nil}
		t.mu.Lock()
		if t.ens != nil {
			req.TunnelID = t.ens.TunnelID
		}
		t.mu.Unlock()
		if st != nil {
			at := st.LastHandshakeAt
			req.Endpoint, req.LastHandshakeAt, req.Mode = st.Endpoint, &at, st.Mode
		}
		if err != nil {
			req.Error = err.Error()
		}
		if r := t.opts.Role; r != nil {
			if h, ok := r.Health(); ok {
				req.Role = &h
			}
		}
		if req.TunnelID != "" {
			var out json.RawMessage
			if rerr := call.Call(ctx, "POST", proto.PathVPNReady, req, &out); rerr != nil && err == nil {
				err = fmt.Errorf("report the tunnel ready: %w", rerr)
				t.report(err)
			}
		}
	}
	return st, err
}

func (t *Tunnel) ensure(ctx context.Context, call agentruntime.Caller) (*proto.VPNTunnelStarted, error) {
	if call == nil {
		return nil, errors.New("not connected to the Engine yet")
	}
	key, err := t.privateKey()
	if err != nil {
		return nil, err
	}
	b, err := t.newBackend(ctx)
	if err != nil {
		return nil, err
	}
	var ens proto.VPNEnsureResponse
	if err := call.Call(ctx, "POST", proto.PathVPNEnsure, proto.VPNEnsureRequest{PublicKey: key.Public().String()}, &ens); err != nil {
		return nil, fmt.Errorf("ensure: %w", err)
	}
	t.mu.Lock()
	t.ens = &ens
	t.mu.Unlock()
	mode, err := b.up(ctx, upConfig{Key: key, Ensure: ens})
	if err != nil && t.auto && !b.inProcess() {
		// The tools are there but no interface can be made (no
		// /dev/net/tun, no CAP_NET_ADMIN, a container): the tunnel runs
		// inside the agent instead.
		t.log.Warn("wg-quick could not bring the interface up; running the tunnel inside the agent", "err", err)
		b = &netstackBackend{}
		mode, err = b.up(ctx, upConfig{Key: key, Ensure: ens})
	}
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.backend = b
	fw := maps.Clone(t.forwards)
	t.mu.Unlock()
	if nb, ok := b.(*netstackBackend); ok {
		if err := nb.setForwards(fw, t.log); err != nil {
			t.log.Warn("relay a forwarded port on the tunnel", "err", err)
		}
	}
	t.setContext(ens, ens.Endpoint, mode)

	endpoint := ens.Endpoint
	at, err := t.awaitHandshake(ctx, b, ens.EngineIP)
	if err != nil && ens.FallbackEndpoint != "" {
		t.log.Info("no handshake on the primary endpoint; trying the fallback", "primary", ens.Endpoint, "fallback", ens.FallbackEndpoint)
		if serr := b.setEndpoint(ctx, ens.FallbackEndpoint); serr != nil {
			return nil, serr
		}
		endpoint = ens.FallbackEndpoint
		at, err = t.awaitHandshake(ctx, b, ens.EngineIP)
		if err != nil {
			// Neither answered: the primary configuration is restored.
			if serr := b.setEndpoint(ctx, ens.Endpoint); serr != nil {
				t.log.Warn("could not restore the primary endpoint", "err", serr)
			}
			endpoint = ens.Endpoint
		}
	}
	t.setContext(ens, endpoint, mode)
	if err != nil {
		tried := ens.Endpoint
		if ens.FallbackEndpoint != "" {
			tried += " or the fallback " + ens.FallbackEndpoint
		}
		return nil, &proto.Error{Code: proto.CodeTunnelNoHandshake, Message: fmt.Sprintf("no WireGuard handshake with the Engine at %s within %s each", tried, t.opts.FallbackWait)}
	}
	st := &proto.VPNTunnelStarted{TunnelID: ens.TunnelID, VirtualIP: ens.VirtualIP, Endpoint: endpoint, LastHandshakeAt: at, Mode: mode}
	t.mu.Lock()
	t.state = st
	t.mu.Unlock()
	t.log.Info("tunnel up", "virtual_ip", ens.VirtualIP, "endpoint", endpoint, "mode", mode)
	return st, nil
}

// awaitHandshake waits up to FallbackWait for a handshake newer than the
// wait's start, nudging the peer with traffic meanwhile.
func (t *Tunnel) awaitHandshake(ctx context.Context, b backend, engineIP string) (time.Time, error) {
	started := t.opts.Now().Add(-time.Second) // handshake times have second resolution
	deadline := time.Now().Add(t.opts.FallbackWait)
	for {
		at, err := b.handshake()
		if err == nil && !at.IsZero() && !at.Before(started) {
			return at, nil
		}
		b.nudge(engineIP)
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("no handshake")
			}
			return time.Time{}, err
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (t *Tunnel) setContext(ens proto.VPNEnsureResponse, endpoint, mode string) {
	if t.opts.Role == nil {
		return
	}
	t.opts.Role.SetContext(map[string]string{
		proto.TunnelContextVirtualIP: ens.VirtualIP, proto.TunnelContextTunnelID: ens.TunnelID,
		proto.TunnelContextAgentID: t.opts.AgentID(), proto.TunnelContextEndpoint: endpoint, proto.TunnelContextMode: mode,
	})
}

func (t *Tunnel) report(err error) {
	if t.opts.Role != nil {
		t.opts.Role.Report(err)
	}
}

// ListenTCP listens on the tunnel's own address through the in-process
// tunnel (netstack mode): only peers of the tunnel (the Engine's /32)
// can reach it; nothing listens on a host interface. It fails in
// wg-quick mode, where the host's interface carries the address.
func (t *Tunnel) ListenTCP(port int) (net.Listener, error) {
	t.mu.Lock()
	b := t.backend
	t.mu.Unlock()
	nb, ok := b.(*netstackBackend)
	if !ok {
		return nil, errors.New("the tunnel is not in-process (netstack mode)")
	}
	return nb.listenTCP(port)
}

// State is the tunnel as last brought up (nil: never).
func (t *Tunnel) State() *proto.VPNTunnelStarted {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state == nil {
		return nil
	}
	s := *t.state
	return &s
}

// privateKey is the agent's key, made once and kept in Dir (0600).
func (t *Tunnel) privateKey() (wgnet.Key, error) {
	path := filepath.Join(t.opts.Dir, "private.key")
	if b, err := os.ReadFile(path); err == nil {
		return wgnet.ParseKey(string(b))
	} else if !errors.Is(err, os.ErrNotExist) {
		return wgnet.Key{}, err
	}
	k, err := wgnet.GenerateKey()
	if err != nil {
		return k, err
	}
	if err := os.MkdirAll(t.opts.Dir, 0o700); err != nil {
		return k, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(k.String()+"\n"), 0o600); err != nil {
		return k, err
	}
	return k, os.Rename(tmp, path)
}

func (t *Tunnel) wantedPath() string { return filepath.Join(t.opts.Dir, "wanted") }

func (t *Tunnel) wanted() bool {
	_, err := os.Stat(t.wantedPath())
	return err == nil
}

func (t *Tunnel) markWanted() error {
	if err := os.MkdirAll(t.opts.Dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(t.wantedPath(), []byte("vpn_tunnel_start\n"), 0o600)
}

// upConfig is what a backend brings up.
type upConfig struct {
	Key    wgnet.Key
	Ensure proto.VPNEnsureResponse
}

// backend is one way to run the agent's end.
type backend interface {
	// up (re)configures the tunnel and returns its mode.
	up(ctx context.Context, c upConfig) (string, error)
	setEndpoint(ctx context.Context, endpoint string) error
	// handshake is the Engine peer's latest handshake (zero: none).
	handshake() (time.Time, error)
	// nudge sends a packet into the tunnel so a handshake starts.
	nudge(engineIP string)
	down() error
	inProcess() bool
}

func (t *Tunnel) newBackend(ctx context.Context) (backend, error) {
	t.mu.Lock()
	cur := t.backend
	t.mu.Unlock()
	if cur != nil {
		return cur, nil
	}
	switch t.opts.Mode {
	case ModeNetstack:
		return &netstackBackend{}, nil
	case "wg-quick":
		if err := t.opts.Tools.Ensure(ctx, t.log); err != nil {
			return nil, err
		}
		return &wgQuickBackend{dir: t.opts.Dir, iface: t.opts.Interface, tools: t.opts.Tools}, nil
	default:
		return nil, roles.Unsupported("unknown tunnel mode %q (%s: netstack or wg-quick)", t.opts.Mode, EnvMode)
	}
}

// shortErr trims a tool's output for an error message.
func shortErr(out []byte) string {
	s := strings.TrimSpace(string(out))
	if len(s) > 600 {
		s = s[len(s)-600:]
	}
	return s
}
