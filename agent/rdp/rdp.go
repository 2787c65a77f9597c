// Package rdp is the agent's RDP role (SPEC agent behaviour 14, "Remote
// desktop rules" 3-5; docs/agent.md "RDP"). The Engine, not the agent,
// runs the RDP client (internal/rdp): the role only makes the host's own
// RDP server reachable on the tunnel address and reports it as
// system:rdp. On Linux that server is xrdp when installed (started
// through systemd, or directly where there is none), or any server
// already listening on TCP 3389; the firewall is not managed on Linux
// (the tunnel admits only the Engine's /32 anyway). The Windows role of
// behaviour 14 (fDenyTSConnections, TermService, the one firewall rule)
// is not built yet: there the role reports unsupported.
package rdp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
	agentruntime "github.com/cairn-rmm/cairn/agent/runtime"
)

// EnsureEvery is the role's report cadence (behaviour 14).
const EnsureEvery = 30 * time.Second

// listenWait bounds the wait for the server's listener after a start.
const listenWait = 15 * time.Second

// Options configure the role.
type Options struct {
	// Role is the system:rdp role (nil: none reported).
	Role *roles.Role
	// VirtualIP is the tunnel address now ("" while the tunnel is down).
	VirtualIP func() string
	Logger    *slog.Logger
	Now       func() time.Time
	// Port is proto.RDPPort (tests use a free one).
	Port int
	// Service is the platform's RDP service (nil: the platform's own).
	Service Service
}

// Service is the host's RDP server as the platform manages it.
type Service interface {
	// Name is the server's name ("xrdp"), "" when none is installed.
	Name() string
	// State is running, stopped or unknown.
	State(ctx context.Context) string
	// Start starts it; with force it restarts it (a recovery).
	Start(ctx context.Context, force bool) error
	// Firewall is how the platform's firewall is handled ("not_managed").
	Firewall() string
}

// RDP is the role.
type RDP struct {
	opts Options
	log  *slog.Logger

	mu        sync.Mutex
	call      agentruntime.Caller
	lastReady time.Time
}

// New returns the role.
func New(opts Options) *RDP {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.VirtualIP == nil {
		opts.VirtualIP = func() string { return "" }
	}
	if opts.Port == 0 {
		opts.Port = proto.RDPPort
	}
	if opts.Service == nil {
		opts.Service = newService()
	}
	return &RDP{opts: opts, log: opts.Logger.With("component", "rdp")}
}

// Register adds the rdp_start and rdp_transport_recovery handlers.
func (r *RDP) Register(h *agentruntime.Handlers) error {
	if err := h.Register(proto.EventRDPStart, func(ctx context.Context, call agentruntime.Caller, p json.RawMessage) (any, error) {
		return r.handle(ctx, call, p, false)
	}); err != nil {
		return err
	}
	return h.Register(proto.EventRDPTransportRecovery, func(ctx context.Context, call agentruntime.Caller, p json.RawMessage) (any, error) {
		return r.handle(ctx, call, p, true)
	})
}

// Session takes each connection loop's caller and reports the role once
// connected (behaviour 14: at start-up).
func (r *RDP) Session(call agentruntime.Caller) {
	r.mu.Lock()
	r.call = call
	r.mu.Unlock()
}

// Run checks and reports the role at start and every EnsureEvery until
// ctx ends (posting /api/agent/rdp/ensure once connected), without
// starting anything: only rdp_start and a recovery do.
func (r *RDP) Run(ctx context.Context) {
	t := time.NewTicker(EnsureEvery)
	defer t.Stop()
	for {
		_, _ = r.Ensure(ctx, nil, false, false)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *RDP) handle(ctx context.Context, call agentruntime.Caller, payload json.RawMessage, recovery bool) (any, error) {
	var req proto.RDPStart
	if len(payload) > 0 {
		if err := json.Unmarshal(payload, &req); err != nil {
			return nil, &proto.Error{Code: "validation_failed", Message: "rdp_start payload: " + err.Error()}
		}
	}
	st, err := r.Ensure(ctx, call, true, recovery)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Ensure checks the listener on the tunnel address; with start it brings
// the service up when nothing listens (with force, a recovery, it
// restarts it whatever the cached state), then reports the role and
// /api/agent/rdp/ensure.
func (r *RDP) Ensure(ctx context.Context, call agentruntime.Caller, start, force bool) (*proto.RDPStarted, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if call != nil {
		r.call = call
	}
	st, err := r.ensure(ctx, start, force)
	r.report(ctx, st, err)
	if err != nil {
		var pe *proto.Error
		if !errors.As(err, &pe) && !errors.Is(err, roles.ErrUnsupported) {
			err = &proto.Error{Code: proto.CodeRDPNotReady, Message: err.Error()}
		}
		return nil, err
	}
	return st, nil
}

func (r *RDP) ensure(ctx context.Context, start, force bool) (*proto.RDPStarted, error) {
	if u, ok := r.opts.Service.(interface{ Unsupported() error }); ok {
		return nil, u.Unsupported()
	}
	vip := r.opts.VirtualIP()
	if vip == "" {
		return nil, errors.New("the tunnel is not up: the Engine reaches the RDP server on the tunnel address only")
	}
	addr := net.JoinHostPort(vip, strconv.Itoa(r.opts.Port))
	svc := r.opts.Service
	listening := dialable(ctx, addr)
	if start && (force || !listening) && svc.Name() != "" {
		if err := svc.Start(ctx, force); err != nil {
			return nil, fmt.Errorf("start %s: %w", svc.Name(), err)
		}
		listening = awaitListener(ctx, addr)
	}
	if !listening {
		if svc.Name() == "" {
			return nil, roles.Unsupported("no RDP server: install xrdp (Debian package xrdp) or run one on TCP %d", r.opts.Port)
		}
		return nil, fmt.Errorf("%s is not listening on %s", svc.Name(), addr)
	}
	r.lastReady = r.opts.Now().UTC()
	return &proto.RDPStarted{ListenAddress: vip, Port: r.opts.Port, Server: r.serverName(), Recovered: force}, nil
}

func (r *RDP) serverName() string {
	if n := r.opts.Service.Name(); n != "" {
		return n
	}
	return "unmanaged"
}

// report sets the role's row and posts it (under r.mu).
func (r *RDP) report(ctx context.Context, st *proto.RDPStarted, err error) {
	if role := r.opts.Role; role != nil {
		listener := "closed"
		if st != nil {
			listener = "listening"
		}
		c := map[string]string{
			proto.RDPContextReady:         strconv.FormatBool(err == nil && st != nil),
			proto.RDPContextServiceState:  r.opts.Service.State(ctx),
			proto.RDPContextListenerState: listener,
			proto.RDPContextServer:        r.serverName(),
			proto.RDPContextFirewall:      r.opts.Service.Firewall(),
		}
		if !r.lastReady.IsZero() {
			c[proto.RDPContextLastReadyAt] = r.lastReady.Format(time.RFC3339)
		}
		role.SetContext(c)
		role.Report(err)
	}
	if r.call == nil {
		return
	}
	req := proto.RDPEnsureRequest{Ready: err == nil && st != nil, Port: r.opts.Port}
	if err != nil {
		req.Error = err.Error()
	}
	if role := r.opts.Role; role != nil {
		if h, ok := role.Health(); ok {
			req.Role = &h
		}
	}
	var out proto.RDPEnsureResponse
	if cerr := r.call.Call(ctx, "POST", proto.PathRDPEnsure, req, &out); cerr != nil {
		r.log.Warn("report the RDP role", "err", cerr)
	}
}

func dialable(ctx context.Context, addr string) bool {
	c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
	if err == nil {
		_ = c.Close()
	}
	return err == nil
}

func awaitListener(ctx context.Context, addr string) bool {
	deadline := time.Now().Add(listenWait)
	for {
		if dialable(ctx, addr) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(250 * time.Millisecond):
		}
	}
}
