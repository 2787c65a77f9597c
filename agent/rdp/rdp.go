// Package rdp is the agent's RDP role (SPEC agent behaviour 14, "Remote
// desktop rules" 3-5; docs/agent.md "RDP"). The Engine, not the agent,
// runs the RDP client (internal/rdp): the role only makes the host's own
// RDP server reachable on the tunnel address and reports it as
// system:rdp. On Linux that server is xrdp when installed (started
// through systemd, or directly where there is none), or any server
// already listening on TCP 3389; the firewall is not managed on Linux
// (the tunnel admits only the Engine's /32 anyway). On Windows the
// server is TermService (termservice.go): fDenyTSConnections, the start
// type, the one firewall rule, audited at most every AuditEvery, and the
// in-process tunnel relays its :3389 to it (Options.Relay).
package rdp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
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
	// Relay, when set, forwards the tunnel address's Port to the local
	// server while the role is enabled and ready (Windows: the
	// in-process tunnel, agent/tunnels Forward).
	Relay Relay
}

// Relay forwards a port of the tunnel address to a local target.
type Relay interface {
	Forward(port int, target string) error
	Unforward(port int)
}

// The optional parts of a Service (the Windows TermService has them).
type (
	// unsupporter: non-nil where the platform has no RDP server.
	unsupporter interface{ Unsupported() error }
	// auditor: the full audit, at most every AuditEvery from the loop.
	auditor interface {
		AuditDue() bool
		Audit(ctx context.Context) error
	}
	// scoper takes /api/agent/rdp/ensure's firewall scope.
	scoper interface {
		SetScope(ctx context.Context, scope proto.RDPEnsureResponse) error
	}
	// contexter adds role context.
	contexter interface{ Context() map[string]string }
	// checkHoster: the listener is checked there, not on the tunnel
	// address (a server on the host behind the in-process tunnel).
	checkHoster interface{ CheckHost() string }
)

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
	kick      chan struct{}
	lastReady time.Time
	// auditErr is the last full audit's failure, reported until the
	// next audit.
	auditErr error
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
	return &RDP{opts: opts, log: opts.Logger.With("component", "rdp"), kick: make(chan struct{}, 1)}
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

// Session takes each connection loop's caller and has Run report the
// role at once (behaviour 14: at start-up, once connected).
func (r *RDP) Session(call agentruntime.Caller) {
	r.mu.Lock()
	r.call = call
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
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
		case <-r.kick:
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
	svc := r.opts.Service
	if u, ok := svc.(unsupporter); ok {
		if err := u.Unsupported(); err != nil {
			return nil, err
		}
	}
	if a, ok := svc.(auditor); ok && (start || a.AuditDue()) {
		// rdp_start and a recovery audit every time, the loop at most
		// every AuditEvery; a failed audit is reported until the next.
		r.auditErr = a.Audit(ctx)
	}
	if r.auditErr != nil {
		return nil, r.auditErr
	}
	vip := r.opts.VirtualIP()
	if vip == "" {
		return nil, errors.New("the tunnel is not up: the Engine reaches the RDP server on the tunnel address only")
	}
	checkHost := vip
	if h, ok := svc.(checkHoster); ok {
		checkHost = h.CheckHost()
	}
	addr := net.JoinHostPort(checkHost, strconv.Itoa(r.opts.Port))
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
		if x, ok := r.opts.Service.(contexter); ok {
			maps.Copy(c, x.Context())
		}
		role.SetContext(c)
		role.Report(err)
	}
	r.relay(st, err)
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
		return
	}
	if s, ok := r.opts.Service.(scoper); ok {
		if serr := s.SetScope(ctx, out); serr != nil {
			r.log.Warn("apply the RDP firewall scope", "err", serr)
		}
	}
}

// relay (under r.mu) forwards the tunnel's port to the local server
// once it listens, while the role is enabled: it stops forwarding when
// the platform has no server (unsupported), the audit fails (group
// policy denies RDP) or the role is stopped. A server merely not
// listening for now keeps the forward (its connections fail).
func (r *RDP) relay(st *proto.RDPStarted, err error) {
	if r.opts.Relay == nil {
		return
	}
	stopped := false
	if role := r.opts.Role; role != nil {
		if h, ok := role.Health(); ok && h.Desired == roles.DesiredStopped {
			stopped = true
		}
	}
	switch {
	case stopped || errors.Is(err, roles.ErrUnsupported) || r.auditErr != nil:
		r.opts.Relay.Unforward(r.opts.Port)
	case st != nil:
		host := "127.0.0.1"
		if h, ok := r.opts.Service.(checkHoster); ok {
			host = h.CheckHost()
		}
		if ferr := r.opts.Relay.Forward(r.opts.Port, net.JoinHostPort(host, strconv.Itoa(r.opts.Port))); ferr != nil {
			r.log.Warn("relay the RDP port on the tunnel", "err", ferr)
		}
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
