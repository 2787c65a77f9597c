// Package vnc is the agent's VNC role (SPEC agent behaviour 13;
// docs/agent.md "VNC"). On Linux with X11 it manages Debian's x11vnc
// against the agent's display ($DISPLAY, or CAIRN_AGENT_VNC_DISPLAY),
// listening on the tunnel address only and admitting only the Engine's
// tunnel /32 (the firewall scope /api/agent/vnc/ensure answers). Its
// password is made at role start, kept in memory, rotated every 24 hours
// (or on a vnc_auth_retry), handed to x11vnc through a file x11vnc removes
// once read, and given to the Engine only sealed to a live session's key
// in answer to vnc_credential_request. The agent never probes its own
// password (auth_verify_reason=local_probe_disabled). On Windows, which
// ships no VNC server, the agent serves RFB itself (agent/vnc/rfbserver:
// GDI capture, SendInput) on the in-process tunnel's address only
// (Options.Listen), with the same password.
package vnc

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
	agentruntime "github.com/cairn-rmm/cairn/agent/runtime"
)

// Environment overrides.
const (
	// EnvDisplay names the X display to serve (default $DISPLAY).
	EnvDisplay = "CAIRN_AGENT_VNC_DISPLAY"
	// EnvRotation is the credential rotation in seconds (default 24 h;
	// the Engine's SERVICE_VNC_CREDENTIAL_ROTATION_SECONDS, set on the
	// agent's host).
	EnvRotation = "SERVICE_VNC_CREDENTIAL_ROTATION_SECONDS"
)

// DefaultRotation is how long one password lives.
const DefaultRotation = 24 * time.Hour

// listenWait bounds the wait for the server's listener after a start.
const listenWait = 15 * time.Second

// Options configure the role.
type Options struct {
	// Display is the X display (default $CAIRN_AGENT_VNC_DISPLAY, then
	// $DISPLAY).
	Display string
	// Role is the system:vnc role (nil: none reported).
	Role *roles.Role
	// VirtualIP is the tunnel address now ("" while the tunnel is down).
	VirtualIP func() string
	// Listen listens on the in-process tunnel's address (nil: the tunnel
	// is not in-process). The in-agent server (Windows) listens only
	// through it; x11vnc listens on the host's tunnel interface instead.
	Listen func(port int) (net.Listener, error)
	// RuntimeDir holds the password hand-over file (0700).
	RuntimeDir string
	Rotation   time.Duration
	Logger     *slog.Logger
	Now        func() time.Time
}

// VNC is the role.
type VNC struct {
	opts Options
	log  *slog.Logger

	mu        sync.Mutex
	password  string
	madeAt    time.Time
	srv       server
	started   *proto.VNCStarted
	lastReady time.Time
	call      agentruntime.Caller
	// port is proto.VNCPort (tests use a free one).
	port int
}

// server is the platform's VNC server.
type server interface {
	// start runs the server on addr:port for display, admitting only
	// allow, with password; it returns once the process is started.
	start(ctx context.Context, c serverConfig) error
	// running reports whether the process is alive.
	running() bool
	stop()
	// topology is the display's monitors.
	topology(ctx context.Context, display string) ([]proto.Monitor, error)
	name() string
}

type serverConfig struct {
	Display, Addr, Allow, Password, RuntimeDir string
	Port                                       int
	Listen                                     func(port int) (net.Listener, error)
}

// inProcess reports whether s serves from inside the agent (through the
// in-process tunnel, which the host cannot dial, and without an X
// display).
func inProcess(s server) bool {
	ip, ok := s.(interface{ inProcess() bool })
	return ok && ip.inProcess()
}

// New returns the role with its first password.
func New(opts Options) (*VNC, error) {
	opts.Display = cmp.Or(opts.Display, os.Getenv(EnvDisplay), os.Getenv("DISPLAY"))
	if opts.Rotation == 0 {
		if s, err := strconv.Atoi(os.Getenv(EnvRotation)); err == nil && s > 0 {
			opts.Rotation = time.Duration(s) * time.Second
		} else {
			opts.Rotation = DefaultRotation
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.VirtualIP == nil {
		opts.VirtualIP = func() string { return "" }
	}
	if opts.RuntimeDir == "" {
		opts.RuntimeDir = os.TempDir()
	}
	v := &VNC{opts: opts, log: opts.Logger.With("component", "vnc"), srv: newServer(), port: proto.VNCPort}
	if err := v.rotate(); err != nil {
		return nil, err
	}
	return v, nil
}

// Register adds the vnc_start, vnc_stop, vnc_refresh and
// vnc_credential_request handlers.
func (v *VNC) Register(h *agentruntime.Handlers) error {
	for typ, fn := range map[string]agentruntime.Handler{
		proto.EventVNCStart: v.handleStart, proto.EventVNCStop: v.handleStop,
		proto.EventVNCCredentialRequest: v.handleCredential, proto.EventVNCRefresh: v.handleRefresh,
	} {
		if err := h.Register(typ, fn); err != nil {
			return err
		}
	}
	return nil
}

// Session takes each connection loop's caller.
func (v *VNC) Session(call agentruntime.Caller) {
	v.mu.Lock()
	v.call = call
	v.mu.Unlock()
}

// Close stops the server with the agent.
func (v *VNC) Close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.srv.stop()
	v.started = nil
}

// passwordLen is the RFB VNC authentication's: only 8 bytes count.
const passwordLen = 8

const passwordAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"

// rotate makes a new password (under v.mu or before v is shared).
func (v *VNC) rotate() error {
	b := make([]byte, passwordLen)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	for i := range b {
		b[i] = passwordAlphabet[int(b[i])%len(passwordAlphabet)]
	}
	v.password, v.madeAt = string(b), v.opts.Now()
	return nil
}

func (v *VNC) handleStart(ctx context.Context, call agentruntime.Caller, payload json.RawMessage) (any, error) {
	var req proto.VNCStart
	if len(payload) > 0 {
		if err := json.Unmarshal(payload, &req); err != nil {
			return nil, &proto.Error{Code: "validation_failed", Message: "vnc_start payload: " + err.Error()}
		}
	}
	st, err := v.Start(ctx, call)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Start brings the server up (or checks the one running) and reports
// the role and /api/agent/vnc/ensure.
func (v *VNC) Start(ctx context.Context, call agentruntime.Caller) (*proto.VNCStarted, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if call != nil {
		v.call = call
	}
	st, err := v.start(ctx)
	v.report(st, err)
	if v.call != nil {
		req := proto.VNCEnsureRequest{Ready: err == nil}
		if st != nil {
			req.ListenAddress, req.Port = st.ListenAddress, st.Port
		}
		if err != nil {
			req.Error = err.Error()
		}
		if r := v.opts.Role; r != nil {
			if h, ok := r.Health(); ok {
				req.Role = &h
			}
		}
		var out proto.VNCEnsureResponse
		if cerr := v.call.Call(ctx, "POST", proto.PathVNCEnsure, req, &out); cerr != nil && err == nil {
			err = fmt.Errorf("report the VNC role: %w", cerr)
		}
	}
	if err != nil {
		var pe *proto.Error
		if !errors.As(err, &pe) && !errors.Is(err, roles.ErrUnsupported) {
			err = &proto.Error{Code: proto.CodeVNCNotReady, Message: err.Error()}
		}
		return nil, err
	}
	return st, nil
}

// start is Start under v.mu.
func (v *VNC) start(ctx context.Context) (*proto.VNCStarted, error) {
	if v.opts.Now().Sub(v.madeAt) >= v.opts.Rotation {
		if err := v.rotate(); err != nil {
			return nil, err
		}
		v.srv.stop() // the running server has the old password
		v.started = nil
	}
	if v.srv.name() == "none" {
		return nil, roles.Unsupported("the VNC role is not built for this platform yet")
	}
	vip := v.opts.VirtualIP()
	if vip == "" {
		return nil, errors.New("the tunnel is not up: the VNC server listens on the tunnel address only")
	}
	if v.opts.Display == "" && !inProcess(v.srv) {
		return nil, roles.Unsupported("No Desktop Environment Active: no X display ($DISPLAY or %s)", EnvDisplay)
	}
	if v.started != nil && v.srv.running() && v.started.ListenAddress == vip {
		return v.started, nil
	}
	// The firewall scope: the only peer the server admits.
	var scope proto.VNCEnsureResponse
	if v.call == nil {
		return nil, errors.New("not connected to the Engine yet")
	}
	if err := v.call.Call(ctx, "POST", proto.PathVNCEnsure, proto.VNCEnsureRequest{Ready: false}, &scope); err != nil {
		return nil, fmt.Errorf("the Engine's firewall scope: %w", err)
	}
	if net.ParseIP(scope.EngineIP) == nil {
		return nil, fmt.Errorf("the Engine's firewall scope %q is not an address", scope.EngineIP)
	}
	v.srv.stop()
	if err := v.srv.start(ctx, serverConfig{Display: v.opts.Display, Addr: vip, Port: v.port, Allow: scope.EngineIP,
		Password: v.password, RuntimeDir: v.opts.RuntimeDir, Listen: v.opts.Listen}); err != nil {
		return nil, err
	}
	// The in-agent server's listener exists once start returns (and the
	// host could not dial the in-process tunnel anyway).
	if !inProcess(v.srv) {
		if err := awaitListener(ctx, net.JoinHostPort(vip, strconv.Itoa(v.port)), v.srv); err != nil {
			v.srv.stop()
			return nil, err
		}
	}
	mons, err := v.srv.topology(ctx, v.opts.Display)
	if err != nil {
		v.log.Warn("display topology unknown", "err", err)
	}
	st := &proto.VNCStarted{ListenAddress: vip, Port: v.port, DisplayTopology: mons, DisplayVirtualBounds: VirtualBounds(mons)}
	v.started = st
	v.lastReady = v.opts.Now().UTC()
	v.log.Info("VNC server up", "listen", vip, "display", v.opts.Display, "server", v.srv.name())
	return st, nil
}

// awaitListener waits until something accepts on addr. It only connects
// and closes: the server's banner is the Engine's to read, and the
// password is never tried here.
func awaitListener(ctx context.Context, addr string, s server) error {
	deadline := time.Now().Add(listenWait)
	for {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = c.Close()
			return nil
		}
		if !s.running() {
			return fmt.Errorf("the VNC server exited before listening on %s", addr)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the VNC server is not listening on %s after %s: %v", addr, listenWait, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// report sets the role's row (under v.mu).
func (v *VNC) report(st *proto.VNCStarted, err error) {
	r := v.opts.Role
	if r == nil {
		return
	}
	service, listener := "stopped", "closed"
	if v.srv.running() {
		service = "running"
	}
	if st != nil && err == nil {
		listener = "listening"
	}
	c := map[string]string{
		proto.VNCContextReady:            strconv.FormatBool(err == nil && st != nil),
		proto.VNCContextServiceState:     service,
		proto.VNCContextListenerState:    listener,
		proto.VNCContextAuthVerifyReason: proto.AuthVerifyLocalProbeDisabled,
		proto.VNCContextServer:           v.srv.name(),
	}
	if !v.lastReady.IsZero() {
		c[proto.VNCContextLastReadyAt] = v.lastReady.Format(time.RFC3339)
	}
	if st != nil {
		c[proto.VNCContextListenAddress] = st.ListenAddress
		c[proto.VNCContextDisplayVirtualBounds] = st.DisplayVirtualBounds
		if b, jerr := json.Marshal(st.DisplayTopology); jerr == nil && len(b) <= 1024 {
			c[proto.VNCContextDisplayTopology] = string(b)
		}
	}
	r.SetContext(c)
	r.Report(err)
}

// handleRefresh is vnc_refresh: the display's topology read again and
// reported (the role row, /api/agent/vnc/ensure and the answer), the
// running server kept as it is (x11vnc follows a resized screen itself,
// -xrandr); a server that is not running is started as by vnc_start.
func (v *VNC) handleRefresh(ctx context.Context, call agentruntime.Caller, payload json.RawMessage) (any, error) {
	var req proto.VNCRefresh
	if len(payload) > 0 {
		if err := json.Unmarshal(payload, &req); err != nil {
			return nil, &proto.Error{Code: "validation_failed", Message: "vnc_refresh payload: " + err.Error()}
		}
	}
	v.mu.Lock()
	if v.started != nil && v.srv.running() {
		mons, err := v.srv.topology(ctx, v.opts.Display)
		if err != nil {
			v.log.Warn("display topology unknown", "err", err)
		} else {
			st := *v.started
			st.DisplayTopology, st.DisplayVirtualBounds = mons, VirtualBounds(mons)
			v.started = &st
		}
	}
	v.mu.Unlock()
	st, err := v.Start(ctx, call)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (v *VNC) handleStop(ctx context.Context, call agentruntime.Caller, _ json.RawMessage) (any, error) {
	v.mu.Lock()
	v.srv.stop()
	v.started = nil
	v.report(nil, errors.New("stopped: no live session"))
	v.mu.Unlock()
	return map[string]bool{"stopped": true}, nil
}

func (v *VNC) handleCredential(ctx context.Context, call agentruntime.Caller, payload json.RawMessage) (any, error) {
	var req proto.VNCCredentialRequest
	if err := json.Unmarshal(payload, &req); err != nil || req.PublicKey == "" {
		return nil, &proto.Error{Code: "validation_failed", Message: "vnc_credential_request needs public_key"}
	}
	v.mu.Lock()
	if req.Rotate {
		if err := v.rotate(); err != nil {
			v.mu.Unlock()
			return nil, err
		}
		v.srv.stop()
		v.started = nil
	}
	running := v.started != nil && v.srv.running()
	pw := v.password
	v.mu.Unlock()
	if !running {
		// A rotation restarted nothing yet, or the server died: bring it
		// up with the password about to be handed over.
		if _, err := v.Start(ctx, call); err != nil {
			return nil, err
		}
	}
	sealed, err := proto.SealVNCCredential(req.PublicKey, pw)
	if err != nil {
		return nil, &proto.Error{Code: "validation_failed", Message: err.Error()}
	}
	return proto.VNCCredential{Sealed: sealed}, nil
}

// VirtualBounds is the smallest rectangle holding every monitor, as
// "WxH+X+Y" ("" without monitors).
func VirtualBounds(mons []proto.Monitor) string {
	if len(mons) == 0 {
		return ""
	}
	x0, y0, x1, y1 := mons[0].X, mons[0].Y, mons[0].X+mons[0].Width, mons[0].Y+mons[0].Height
	for _, m := range mons[1:] {
		x0, y0 = min(x0, m.X), min(y0, m.Y)
		x1, y1 = max(x1, m.X+m.Width), max(y1, m.Y+m.Height)
	}
	return fmt.Sprintf("%dx%d+%d+%d", x1-x0, y1-y0, x0, y0)
}
