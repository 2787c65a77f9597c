package proto

import (
	"crypto/rand"
	"encoding/base64"
	"errors"

	"golang.org/x/crypto/nacl/box"
)

// ---- The VNC role (SPEC agent behaviour 13, "Remote desktop rules") -------
//
// vnc_start asks the agent to serve its desktop on its tunnel address (the
// answer says where); vnc_stop ends the server; vnc_credential_request asks
// for the role's runtime password, which the agent seals to the public key
// in the request: only the Engine process holding the matching private key
// (the gateway of one live session) can open it, so the password is never
// in a workflow's history, an activity row or a log in the clear.

// VNC events.
const (
	EventVNCStart             = "vnc_start"
	EventVNCStop              = "vnc_stop"
	EventVNCCredentialRequest = "vnc_credential_request"
	// EventVNCRefresh re-reads the display's topology (monitors added,
	// removed or resized since vnc_start) without restarting a running
	// server; it answers VNCStarted, as vnc_start does.
	EventVNCRefresh = "vnc_refresh"
)

// PathVNCEnsure is the agent's POST /api/agent/vnc/ensure (Device auth):
// the role's readiness; the answer is the Engine's /32 the server admits.
// It never carries the password either way.
const PathVNCEnsure = "/api/agent/vnc/ensure"

// VNCPort is the RFB port the role listens on (tunnel address only).
const VNCPort = 5900

// AuthVerifyLocalProbeDisabled is the role's auth_verify_reason: the agent
// never tries its own password against its own server.
const AuthVerifyLocalProbeDisabled = "local_probe_disabled"

// VNC role context keys (SPEC behaviour 13; docs/agent.md "VNC").
const (
	VNCContextReady                = "ready"
	VNCContextServiceState         = "service_state"
	VNCContextListenerState        = "listener_state"
	VNCContextLastReadyAt          = "last_ready_at"
	VNCContextDisplayTopology      = "display_topology"
	VNCContextDisplayVirtualBounds = "display_virtual_bounds"
	VNCContextAuthVerifyReason     = "auth_verify_reason"
	VNCContextListenAddress        = "listen_address"
	VNCContextServer               = "server"
)

// CodeVNCNotReady: the agent could not bring its VNC server up (no
// display, no server binary, the tunnel not up); the message says which.
const CodeVNCNotReady = "vnc_not_ready"

// VNCStart is vnc_start's payload.
type VNCStart struct {
	SessionID string `json:"session_id"`
}

// VNCStarted is the agent's answer to vnc_start: the server listens.
type VNCStarted struct {
	ListenAddress string `json:"listen_address"`
	Port          int    `json:"port"`
	// DisplayTopology is the monitors (x,y,w,h each) and
	// DisplayVirtualBounds the whole virtual desktop, "WxH+X+Y".
	DisplayTopology      []Monitor `json:"display_topology"`
	DisplayVirtualBounds string    `json:"display_virtual_bounds"`
}

// Monitor is one display of the virtual desktop.
type Monitor struct {
	Name    string `json:"name"`
	X       int    `json:"x"`
	Y       int    `json:"y"`
	Width   int    `json:"width"`
	Height  int    `json:"height"`
	Primary bool   `json:"primary"`
}

// VNCRefresh is vnc_refresh's payload.
type VNCRefresh struct {
	SessionID string `json:"session_id"`
}

// VNCStop is vnc_stop's payload.
type VNCStop struct {
	SessionID string `json:"session_id"`
}

// VNCCredentialRequest is vnc_credential_request's payload: the session it
// is for and the gateway's one-time public key (X25519, base64).
type VNCCredentialRequest struct {
	SessionID string `json:"session_id"`
	PublicKey string `json:"public_key"`
	// Rotate asks for a new password first (vnc_auth_retry).
	Rotate bool `json:"rotate,omitempty"`
}

// VNCCredential is the answer: the password sealed (nacl anonymous box,
// base64) to the request's key.
type VNCCredential struct {
	Sealed string `json:"sealed"`
}

// VNCEnsureRequest is POST /api/agent/vnc/ensure.
type VNCEnsureRequest struct {
	Ready         bool   `json:"ready"`
	ListenAddress string `json:"listen_address,omitempty"`
	Port          int    `json:"port,omitempty"`
	Error         string `json:"error,omitempty"`
	// Role is the system:vnc row.
	Role *RoleHealth `json:"role,omitempty"`
}

// VNCEnsureResponse is the firewall scope: the only address the server
// may admit (the Engine's tunnel /32).
type VNCEnsureResponse struct {
	EngineIP string `json:"engine_ip"`
	Port     int    `json:"port"`
}

// VNCKeyPair is a gateway's one-time key pair for a credential request.
func VNCKeyPair() (public string, private *[32]byte, err error) {
	pub, priv, err := box.GenerateKey(rand.Reader)
	if err != nil {
		return "", nil, err
	}
	return base64.StdEncoding.EncodeToString(pub[:]), priv, nil
}

// SealVNCCredential seals password to public (the agent's side).
func SealVNCCredential(public, password string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(public)
	if err != nil || len(raw) != 32 {
		return "", errors.New("public_key must be 32 bytes of base64")
	}
	var pub [32]byte
	copy(pub[:], raw)
	sealed, err := box.SealAnonymous(nil, []byte(password), &pub, rand.Reader)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(sealed), nil
}

// OpenVNCCredential opens a sealed password with the key pair that asked.
func OpenVNCCredential(public string, private *[32]byte, sealed string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(public)
	if err != nil || len(raw) != 32 {
		return "", errors.New("bad public key")
	}
	var pub [32]byte
	copy(pub[:], raw)
	ct, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil {
		return "", errors.New("the sealed credential is not base64")
	}
	out, ok := box.OpenAnonymous(nil, ct, &pub, private)
	if !ok {
		return "", errors.New("the sealed credential does not open with this session's key")
	}
	return string(out), nil
}
