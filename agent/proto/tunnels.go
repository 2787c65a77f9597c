package proto

import "time"

// ---- The managed WireGuard tunnel (SPEC agent behaviour 9) ---------------
//
// The Engine asks an agent to bring its tunnel up with vpn_tunnel_start;
// the agent then calls /api/agent/vpn/ensure for its configuration,
// configures its interface, waits for a handshake (falling back to
// fallback_endpoint after FallbackWait) and reports /api/agent/vpn/ready.
// Tunnels are persistent: there is no stop event, and an agent ignores
// one.

// EventVPNTunnelStart asks the agent to establish (or re-check) its tunnel.
const EventVPNTunnelStart = "vpn_tunnel_start"

// Tunnel codes an agent may answer vpn_tunnel_start with.
const (
	// CodeTunnelToolsMissing: wg/wg-quick are missing and could not be
	// installed (the package manager's error is in the message).
	CodeTunnelToolsMissing = "tunnel_tools_missing"
	// CodeTunnelNoHandshake: neither the primary nor the fallback endpoint
	// answered with a handshake in time.
	CodeTunnelNoHandshake = "tunnel_no_handshake"
)

// Tunnel timings and limits (SPEC "Limits").
const (
	// FallbackWait is how long an agent waits for a fresh handshake on an
	// endpoint before it tries the next.
	FallbackWait = 8 * time.Second
	// InstallThrottle spaces automatic installs of the WireGuard tools.
	InstallThrottle = 15 * time.Minute
	// HandshakeFresh is how recent a handshake must be for the tunnel to
	// count as healthy (WireGuard re-handshakes every two minutes while
	// traffic or keepalives flow).
	HandshakeFresh = 3 * time.Minute
	// PersistentKeepalive is the keepalive both sides configure.
	PersistentKeepalive = 25
)

// VPNTunnelStart is vpn_tunnel_start's payload: nothing the agent needs
// (it asks /api/agent/vpn/ensure), but the tunnel the Engine expects.
type VPNTunnelStart struct {
	TunnelID string `json:"tunnel_id,omitempty"`
}

// VPNTunnelStarted is the agent's answer: the tunnel is up and handshakes.
type VPNTunnelStarted struct {
	TunnelID        string    `json:"tunnel_id"`
	VirtualIP       string    `json:"virtual_ip"`
	Endpoint        string    `json:"endpoint"`
	LastHandshakeAt time.Time `json:"last_handshake_at"`
	// Mode is "kernel" (wg-quick with the kernel's WireGuard),
	// "wireguard-go" (wg-quick over the user-space daemon) or "netstack"
	// (inside the agent process).
	Mode string `json:"mode"`
}

// VPNEnsureRequest is POST /api/agent/vpn/ensure: the agent's WireGuard
// public key (base64, 32 bytes). The private key never leaves the agent.
type VPNEnsureRequest struct {
	PublicKey string `json:"public_key"`
}

// VPNEnsureResponse is the tunnel's configuration for the agent.
type VPNEnsureResponse struct {
	TunnelID string `json:"tunnel_id"`
	// VirtualIP is the agent's tunnel address, EngineIP the Engine's; each
	// side allows exactly the other's /32.
	VirtualIP       string `json:"virtual_ip"`
	EngineIP        string `json:"engine_ip"`
	ServerPublicKey string `json:"server_public_key"`
	// Endpoint is host:port of the Engine's WireGuard; FallbackEndpoint,
	// when the Engine has one, a non-loopback IP with the same port.
	Endpoint            string `json:"endpoint"`
	FallbackEndpoint    string `json:"fallback_endpoint,omitempty"`
	PersistentKeepalive int    `json:"persistent_keepalive"`
	MTU                 int    `json:"mtu"`
}

// VPNReadyRequest is POST /api/agent/vpn/ready: the tunnel's state as the
// agent sees it. Ready needs, on Linux, a fresh peer handshake.
type VPNReadyRequest struct {
	TunnelID        string     `json:"tunnel_id"`
	Ready           bool       `json:"ready"`
	Endpoint        string     `json:"endpoint,omitempty"`
	LastHandshakeAt *time.Time `json:"last_handshake_at,omitempty"`
	Mode            string     `json:"mode,omitempty"`
	Error           string     `json:"error,omitempty"`
	// Role is the agent's system:vpn_tunnel row (context: virtual_ip,
	// tunnel_id, agent_id), stored at once rather than at the next
	// status or details post.
	Role *RoleHealth `json:"role,omitempty"`
}

// Tunnel role context keys (SPEC "Agent role health snapshot": tunnel
// detail carries virtual IP, tunnel ID and agent ID).
const (
	TunnelContextVirtualIP = "virtual_ip"
	TunnelContextTunnelID  = "tunnel_id"
	TunnelContextAgentID   = "agent_id"
	TunnelContextEndpoint  = "endpoint"
	TunnelContextMode      = "mode"
)

// Tunnel callback paths (Device auth).
const (
	PathVPNEnsure = "/api/agent/vpn/ensure"
	PathVPNReady  = "/api/agent/vpn/ready"
)
