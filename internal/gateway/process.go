package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/crypto/nacl/box"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/proto/wgnet"
	"github.com/cairn-rmm/cairn/internal/internalauth"
	"github.com/cairn-rmm/cairn/internal/tunnels"
	"github.com/cairn-rmm/cairn/internal/vnc"
)

// The Engine's Internal routes the gateway calls.
const (
	PathPrepare      = "/api/internal/job-scheduler/vpn-prepare"
	PathSessions     = "/api/internal/job-scheduler/vpn-sessions"
	PathSessionEvent = "/api/internal/vnc/session-event"
	PathCredential   = "/api/internal/vnc/credential"
)

// PrepareRequest is vpn-prepare's body: the gateway's X25519 public key
// the WireGuard key is sealed to, and what administrators see.
type PrepareRequest struct {
	PublicKey string `json:"public_key"`
	Name      string `json:"name"`
	Version   string `json:"version"`
}

// SessionsRequest is vpn-sessions' body: the handshakes the gateway saw.
type SessionsRequest struct {
	Handshakes []tunnels.GatewayHandshake `json:"handshakes"`
}

// SessionsResponse answers the peers to serve.
type SessionsResponse struct {
	Peers []tunnels.GatewayPeer `json:"peers"`
}

// CredentialRequest asks for a live session's VNC credential sealed to
// the gateway's one-time key.
type CredentialRequest struct {
	SessionID string `json:"session_id"`
	PublicKey string `json:"public_key"`
}

// CredentialResponse is the sealed credential (only the gateway's
// one-time private key opens it).
type CredentialResponse struct {
	Sealed string `json:"sealed"`
}

// EngineClient signs the gateway's Internal calls to the Engine.
type EngineClient struct {
	Base   string
	KeyID  string
	Secret []byte
	HTTP   *http.Client
}

// Do sends a signed request; an error answer comes back as a
// *cairn.Error with the Engine's code.
func (c *EngineClient) Do(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		body, _ = json.Marshal(in)
	}
	r, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Base, "/")+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if in != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	internalauth.Sign(r, body, c.KeyID, c.Secret, time.Now())
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(r)
	if err != nil {
		return cairn.Errorf(cairn.ECodeUnavailable, "the Engine could not be reached: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		data, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		if json.Unmarshal(data, &e) == nil && e.Error.Code != "" {
			return cairn.Errorf(e.Error.Code, "%s", e.Error.Message)
		}
		return fmt.Errorf("the Engine answered %s", res.Status)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(res.Body).Decode(out)
}

// SessionEvent is the HTTP implementation of vnc.EventSink.
func (c *EngineClient) SessionEvent(ctx context.Context, e vnc.Event) error {
	return c.Do(ctx, http.MethodPost, PathSessionEvent, e, nil)
}

// Process is the gateway process: the Engine's WireGuard end and the RFB
// gateway.
type Process struct {
	Engine *EngineClient
	// VNC are the gateway's waits (SERVICE_VNC_*).
	VNC  vnc.Config
	Name string
	// Version is reported in vpn-prepare.
	Version string
	// Poll is how often it renews its lease and reads its peers.
	Poll time.Duration
	Log  *slog.Logger

	verify *internalauth.Local
	once   sync.Once

	mu    sync.Mutex
	dev   *wgnet.Device
	peers map[cairn.DeviceGUID]netip.Addr
	// events is where session events go (the Engine; tests may record).
	events vnc.EventSink
}

func (p *Process) init() {
	p.once.Do(func() {
		p.verify = &internalauth.Local{KeyID: p.Engine.KeyID, Secret: internalauth.Derive(p.Engine.Secret, internalauth.PurposeToGateway)}
		if p.Poll == 0 {
			p.Poll = 2 * time.Second
		}
		if p.Log == nil {
			p.Log = slog.New(slog.DiscardHandler)
		}
		if p.events == nil {
			p.events = p.Engine
		}
		if p.VNC.EstablishDeadline == 0 {
			p.VNC = vnc.DefaultConfig()
		}
	})
}

// Run keeps the WireGuard device and its peers until ctx ends.
func (p *Process) Run(ctx context.Context) {
	p.init()
	defer p.stop()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if err := p.reconcile(ctx); err != nil && ctx.Err() == nil {
			p.Log.Warn("gateway: the Engine's tunnels could not be refreshed; retrying", "err", err)
			if cairn.IsCode(err, tunnels.ECodeUnavailable) || cairn.IsCode(err, internalauth.ECodeSignatureInvalid) {
				// The lease is someone else's (or the key was retired):
				// stop serving; prepare again next time.
				p.stop()
			}
		}
		timer.Reset(p.Poll)
	}
}

func (p *Process) running() *wgnet.Device {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dev
}

func (p *Process) reconcile(ctx context.Context) error {
	dev := p.running()
	if dev == nil {
		var err error
		if dev, err = p.prepare(ctx); err != nil {
			return err
		}
	}
	var req SessionsRequest
	if hs, err := dev.Handshakes(); err == nil {
		for k, at := range hs {
			req.Handshakes = append(req.Handshakes, tunnels.GatewayHandshake{PublicKey: k.String(), At: at})
		}
	}
	var res SessionsResponse
	if err := p.Engine.Do(ctx, http.MethodPost, PathSessions, req, &res); err != nil {
		return err
	}
	peers := make([]wgnet.Peer, 0, len(res.Peers))
	byGUID := make(map[cairn.DeviceGUID]netip.Addr, len(res.Peers))
	for _, r := range res.Peers {
		k, err := wgnet.ParseKey(r.PublicKey)
		ip, ierr := netip.ParseAddr(r.VirtualIP)
		if err != nil || ierr != nil {
			continue
		}
		peers = append(peers, wgnet.Peer{PublicKey: k, AllowedIP: ip})
		byGUID[r.DeviceGUID] = ip
	}
	if err := dev.SetPeers(peers); err != nil {
		return err
	}
	p.mu.Lock()
	p.peers = byGUID
	p.mu.Unlock()
	return nil
}

// prepare asks for the WireGuard key sealed to a fresh key pair of this
// process and starts the device.
func (p *Process) prepare(ctx context.Context) (*wgnet.Device, error) {
	pub, priv, err := box.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	var cfg tunnels.GatewayConfig
	if err := p.Engine.Do(ctx, http.MethodPost, PathPrepare, PrepareRequest{PublicKey: base64.StdEncoding.EncodeToString(pub[:]),
		Name: p.Name, Version: p.Version}, &cfg); err != nil {
		return nil, err
	}
	key, err := tunnels.OpenGatewayKey(cfg.SealedPrivateKey, pub, priv)
	if err != nil {
		return nil, err
	}
	addr, err := netip.ParseAddr(cfg.EngineIP)
	if err != nil {
		return nil, fmt.Errorf("vpn-prepare answered engine_ip %q", cfg.EngineIP)
	}
	dev, err := wgnet.Start(wgnet.Config{PrivateKey: key, Address: addr, ListenPort: cfg.Port, MTU: cfg.MTU,
		Logf: func(f string, a ...any) { p.Log.Debug("wireguard: " + fmt.Sprintf(f, a...)) }})
	if err != nil {
		return nil, err
	}
	p.Log.Info("gateway: WireGuard up", "port", cfg.Port, "engine_ip", cfg.EngineIP, "public_key", cfg.PublicKey)
	p.mu.Lock()
	p.dev = dev
	p.mu.Unlock()
	return dev, nil
}

func (p *Process) stop() {
	p.mu.Lock()
	dev := p.dev
	p.dev, p.peers = nil, nil
	p.mu.Unlock()
	if dev != nil {
		dev.Close()
		p.Log.Info("gateway: WireGuard down")
	}
}

// Ready says whether the device runs (the gateway's /ready).
func (p *Process) Ready() bool { return p.running() != nil }

// dial reaches port on guid's tunnel address.
func (p *Process) dial(ctx context.Context, guid cairn.DeviceGUID, port int) (net.Conn, error) {
	p.mu.Lock()
	dev := p.dev
	ip, ok := p.peers[guid]
	p.mu.Unlock()
	if dev == nil {
		return nil, cairn.Errorf(tunnels.ECodeUnavailable, "the gateway's WireGuard is not up yet; try again")
	}
	if !ok {
		return nil, cairn.Errorf(tunnels.ECodeNoTunnel, "the gateway serves no tunnel of this device")
	}
	c, err := dev.DialTCP(ctx, netip.AddrPortFrom(ip, uint16(port)))
	if err != nil {
		return nil, cairn.Errorf(tunnels.ECodeUnreachable, "TCP %s:%d through the tunnel: %v", ip, port, err)
	}
	return c, nil
}

// Handler serves the Engine's signed requests: /ready, tunnel dials and
// desktop sessions.
func (p *Process) Handler() http.Handler {
	p.init()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		if !p.Ready() {
			http.Error(w, "the gateway's WireGuard is not up", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("GET "+PathDial, p.signed(p.serveDial))
	mux.Handle("GET "+PathVNC+"{id}", p.signed(p.serveVNC))
	return mux
}

// signed refuses what the Engine did not sign (under the key derived
// from this gateway's Internal key), and replays.
func (p *Process) signed(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := p.verify.Verify(r.Method, r.URL.RequestURI(), nil, r.Header); err != nil {
			writeError(w, http.StatusUnauthorized, err)
			return
		}
		next(w, r)
	})
}

func writeError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	code, msg := cairn.ErrorCode(err), "the request failed"
	var ce *cairn.Error
	if errors.As(err, &ce) {
		msg = ce.Message
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func (p *Process) serveDial(w http.ResponseWriter, r *http.Request) {
	guid := cairn.DeviceGUID(r.URL.Query().Get("guid"))
	port, err := strconv.Atoi(r.URL.Query().Get("port"))
	if err != nil || port < 1 || port > 65535 {
		writeError(w, http.StatusBadRequest, cairn.Invalid("port", "must be a TCP port"))
		return
	}
	c, err := p.dial(r.Context(), guid, port)
	if err != nil {
		status := http.StatusBadGateway
		if cairn.IsCode(err, tunnels.ECodeNoTunnel) {
			status = http.StatusNotFound
		}
		writeError(w, status, err)
		return
	}
	defer c.Close()
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ws.SetReadLimit(8 << 20)
	conn := websocket.NetConn(r.Context(), ws, websocket.MessageBinary)
	defer conn.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(c, conn); done <- struct{}{} }()
	go func() { _, _ = io.Copy(conn, c); done <- struct{}{} }()
	<-done
}

func (p *Process) serveVNC(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	session := r.PathValue("id")
	guid := cairn.DeviceGUID(r.URL.Query().Get("guid"))
	p.mu.Lock()
	_, known := p.peers[guid]
	p.mu.Unlock()
	if !known {
		writeError(w, http.StatusNotFound, cairn.Errorf(tunnels.ECodeNoTunnel, "the gateway serves no tunnel of this device"))
		return
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"binary"}})
	if err != nil {
		vnc.ReportError(context.WithoutCancel(ctx), p.events, session, cairn.Errorf(tunnels.ECodeUnavailable, "the Engine's socket to the gateway failed"))
		return
	}
	ws.SetReadLimit(1 << 20)
	g := &vnc.Gateway{Config: p.VNC, Rotate: r.URL.Query().Get("rotate") == "1",
		Dial: func(ctx context.Context) (net.Conn, error) { return p.dial(ctx, guid, proto.VNCPort) },
		Credential: func(ctx context.Context, pub string) (string, error) {
			var out CredentialResponse
			if err := p.Engine.Do(ctx, http.MethodPost, PathCredential, CredentialRequest{SessionID: session, PublicKey: pub}, &out); err != nil {
				return "", err
			}
			return out.Sealed, nil
		}}
	reason, err := g.Attach(ctx, session, websocket.NetConn(ctx, ws, websocket.MessageBinary), p.events)
	if err != nil {
		msg := "the remote desktop could not be opened"
		var ce *cairn.Error
		if errors.As(err, &ce) {
			msg = ce.Code + ": " + ce.Message
		} else {
			p.Log.Error("gateway: remote desktop session", "session", session, "err", err)
		}
		_ = ws.Close(websocket.StatusPolicyViolation, CloseText(msg))
		return
	}
	_ = ws.Close(websocket.StatusNormalClosure, reason)
}

// CloseText bounds a close frame's reason (123 bytes).
func CloseText(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}
