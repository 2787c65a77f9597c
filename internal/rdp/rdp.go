// Package rdp is the Engine's remote desktop over RDP (issue 23; SPEC
// "Remote desktop rules" 3-5; docs/architecture.md "Remote desktop
// (RDP)"). No Go RDP client is served (docs/DEPENDENCIES), so per session
// the Engine runs a bridge of packaged tools in the replica that holds the
// WireGuard: a private Xvfb display, Debian's xfreerdp on it connected to
// the agent's RDP port through the Engine's user-space tunnel (a loopback
// relay accepting that one connection), and x11vnc exporting that display
// on loopback with a one-time password, which the existing RFB gateway
// relays to the browser exactly as a VNC session. The RDP credentials go
// to xfreerdp on its standard input only: never on a command line, in a
// workflow's history, an answer or a log.
package rdp

import (
	"context"
	"os/exec"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/credentials"
)

// Error codes (SPEC "Errors"; docs/api.md "Remote desktop (RDP)").
const (
	// ECodeBackendNotReady: the agent's RDP port did not answer an X.224
	// Connection Request through the tunnel, even after one
	// rdp_transport_recovery (rule 5).
	ECodeBackendNotReady = "rdp_backend_not_ready"
	// ECodeCredentialInvalid: the stored credential is not usable for this
	// device (another site, not Windows/WinRM, not Machine/Domain, no
	// password, unreadable), or manual credentials were not held here.
	ECodeCredentialInvalid = "rdp_credential_invalid"
	// ECodeAuthFailed: the RDP server refused the credentials.
	ECodeAuthFailed = "rdp_auth_failed"
	// ECodeConnectFailed: xfreerdp could not open the session for another
	// reason (its exit says which).
	ECodeConnectFailed = "rdp_connect_failed"
	// ECodeBridgeUnavailable: this Engine host lacks the bridge's tools
	// (Xvfb, xfreerdp, x11vnc, xwininfo).
	ECodeBridgeUnavailable = "rdp_bridge_unavailable"
)

// Protocol is the session protocol's name.
const Protocol = "rdp"

// Display size limits (the bridge's Xvfb and the RDP session).
const (
	DefaultWidth  = 1280
	DefaultHeight = 800
	MinWidth      = 640
	MaxWidth      = 3840
	MinHeight     = 480
	MaxHeight     = 2160
	MinDPI        = 96
	MaxDPI        = 480
)

// Tools are the bridge's programs, each needed on the Engine's host.
var Tools = []string{"Xvfb", "xfreerdp", "x11vnc", "xwininfo"}

// Missing lists the bridge's tools this host lacks.
func Missing() []string {
	var out []string
	for _, t := range Tools {
		if _, err := exec.LookPath(t); err != nil {
			out = append(out, t)
		}
	}
	return out
}

// Credentials are what xfreerdp logs in with. Password never leaves the
// process but through xfreerdp's standard input.
type Credentials struct {
	Username string
	Domain   string
	Password string
}

// String never shows the password.
func (c Credentials) String() string { return "rdp credentials for " + c.Username }

// GoString never shows the password.
func (c Credentials) GoString() string { return c.String() }

// Params are a session's display and quality (rule 4).
type Params struct {
	Width, Height, DPI int
	// Quality is speed or quality.
	Quality string
}

// manualTTL bounds how long manual credentials wait for their session's
// bridge (the establish deadline, with room).
const manualTTL = 2 * time.Minute

type manual struct {
	c   Credentials
	exp time.Time
}

// Service keeps this process's bridges and the manual credentials of the
// sessions establishing here.
type Service struct {
	mu      sync.Mutex
	bridges map[string]*Bridge
	manual  map[string]manual
	// RuntimeDir holds each bridge's private directory (default: the
	// system's temporary directory).
	RuntimeDir string
	Now        func() time.Time
}

// NewService returns the service.
func NewService() *Service {
	return &Service{bridges: map[string]*Bridge{}, manual: map[string]manual{}, Now: time.Now}
}

// HoldManual keeps manual credentials for sessionID's bridge, in memory
// only, until the bridge takes them or manualTTL passes.
func (s *Service) HoldManual(sessionID string, c Credentials) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	for id, m := range s.manual {
		if now.After(m.exp) {
			delete(s.manual, id)
		}
	}
	s.manual[sessionID] = manual{c: c, exp: now.Add(manualTTL)}
}

// TakeManual hands sessionID's manual credentials over once.
func (s *Service) TakeManual(sessionID string) (Credentials, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.manual[sessionID]
	delete(s.manual, sessionID)
	if !ok || s.Now().After(m.exp) {
		return Credentials{}, false
	}
	return m.c, true
}

// DropManual forgets sessionID's manual credentials (its session ended).
func (s *Service) DropManual(sessionID string) {
	s.mu.Lock()
	delete(s.manual, sessionID)
	s.mu.Unlock()
}

// Bridge is sessionID's running bridge, or nil.
func (s *Service) Bridge(sessionID string) *Bridge {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bridges[sessionID]
	if b != nil && b.Ended() {
		return nil
	}
	return b
}

// Start runs sessionID's bridge (replacing one left from an earlier
// attempt) and keeps it until Stop.
func (s *Service) Start(ctx context.Context, sessionID string, dial Dialer, c Credentials, p Params) (*Bridge, error) {
	if m := Missing(); len(m) > 0 {
		return nil, cairn.Errorf(ECodeBridgeUnavailable, "this Engine host lacks %v for the RDP bridge (Debian xvfb, freerdp2-x11, x11vnc, x11-utils)", m)
	}
	s.Stop(sessionID)
	b, err := startBridge(ctx, bridgeConfig{dir: s.RuntimeDir, dial: dial, creds: c, params: p})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.bridges[sessionID] = b
	s.mu.Unlock()
	return b, nil
}

// Stop ends sessionID's bridge (if any) and forgets its credentials.
func (s *Service) Stop(sessionID string) {
	s.mu.Lock()
	b := s.bridges[sessionID]
	delete(s.bridges, sessionID)
	delete(s.manual, sessionID)
	s.mu.Unlock()
	if b != nil {
		b.Close()
	}
}

// Close ends every bridge (the Engine stops).
func (s *Service) Close() {
	s.mu.Lock()
	all := s.bridges
	s.bridges = map[string]*Bridge{}
	s.manual = map[string]manual{}
	s.mu.Unlock()
	for _, b := range all {
		b.Close()
	}
}

// Running is how many bridges run here.
func (s *Service) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bridges)
}

// FromStored turns a revealed stored credential into the bridge's.
func FromStored(sec credentials.Secret) Credentials {
	return Credentials{Username: sec.Username, Domain: sec.Domain, Password: sec.Password}
}
