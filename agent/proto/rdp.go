package proto

// ---- The RDP role (SPEC agent behaviour 14, "Remote desktop rules" 3-5) --
//
// rdp_start asks the agent to make its RDP server reachable on its tunnel
// address (the answer says where, never any login); rdp_transport_recovery
// is rule 5's one recovery after a failed probe: it bypasses what the
// agent knows of the role's readiness and reconciles the service (and, on
// Windows, the firewall rule) before answering. The agent reports the
// role to /api/agent/rdp/ensure, whose answer is the firewall scope.

// RDP events.
const (
	EventRDPStart             = "rdp_start"
	EventRDPTransportRecovery = "rdp_transport_recovery"
)

// PathRDPEnsure is the agent's POST /api/agent/rdp/ensure (Device auth):
// the role's state; the answer is the tunnel firewall scope. It never
// carries login credentials either way.
const PathRDPEnsure = "/api/agent/rdp/ensure"

// RDPPort is the port the role serves (TCP 3389).
const RDPPort = 3389

// CodeRDPNotReady: the agent has no RDP server listening (none
// installed, the service would not start, the tunnel is down); the
// message says which.
const CodeRDPNotReady = "rdp_not_ready"

// RDP role context keys (SPEC behaviour 14; docs/agent.md "RDP").
const (
	RDPContextReady         = "ready"
	RDPContextServiceState  = "service_state"
	RDPContextStartMode     = "start_mode"
	RDPContextListenerState = "listener_state"
	RDPContextServer        = "server"
	RDPContextFirewall      = "firewall"
	RDPContextLastReadyAt   = "last_ready_at"
	RDPContextLastAuditAt   = "last_audit_at"
	RDPContextDenyTS        = "deny_ts_connections"
)

// RDPStart is rdp_start's payload (rdp_transport_recovery's too).
type RDPStart struct {
	SessionID string `json:"session_id"`
}

// RDPStarted is the agent's answer: the server listens there.
type RDPStarted struct {
	ListenAddress string `json:"listen_address"`
	Port          int    `json:"port"`
	Server        string `json:"server"`
	// Recovered: the answer to rdp_transport_recovery, after the service
	// (and firewall) reconciliation.
	Recovered bool `json:"recovered,omitempty"`
}

// RDPEnsureRequest is POST /api/agent/rdp/ensure.
type RDPEnsureRequest struct {
	Ready bool   `json:"ready"`
	Port  int    `json:"port,omitempty"`
	Error string `json:"error,omitempty"`
	// Role is the system:rdp row.
	Role *RoleHealth `json:"role,omitempty"`
}

// RDPEnsureResponse is the firewall scope: inbound TCP Port from
// EngineIP (the Engine's tunnel /32) to AgentIP (the agent's tunnel /32).
type RDPEnsureResponse struct {
	EngineIP string `json:"engine_ip"`
	AgentIP  string `json:"agent_ip"`
	Port     int    `json:"port"`
}
