package proto

import (
	"encoding/json"
	"time"
)

// ---- Heartbeat (PathHeartbeat) -----------------------------------------

// Heartbeat is the body of PathHeartbeat: light metrics and the metadata
// queue (SPEC "Agent-side behavior" items 2 and 7).
type Heartbeat struct {
	SentAt         time.Time       `json:"sent_at"`
	AgentVersion   string          `json:"agent_version"`
	BootID         string          `json:"boot_id"`
	Metrics        Metrics         `json:"metrics"`
	MetadataFields []MetadataWrite `json:"metadata_fields,omitempty"`
	// MetadataRevision is the Engine's metadata revision of this device
	// the agent last caught up with (HeartbeatResponse.MetadataRevision);
	// 0 before the first.
	MetadataRevision int64 `json:"metadata_revision,omitempty"`
	// ScriptSigningKeyIDs are the IDs (KeyID) of the script-signing keys
	// the agent trusts, so the Engine knows who has a rotated key.
	ScriptSigningKeyIDs []string `json:"script_signing_key_ids,omitempty"`
}

// Metrics are the heartbeat's light metrics.
type Metrics struct {
	CPUPercent       float64  `json:"cpu_percent"`
	MemoryUsedBytes  uint64   `json:"memory_used_bytes"`
	MemoryTotalBytes uint64   `json:"memory_total_bytes"`
	UptimeSeconds    int64    `json:"uptime_seconds"`
	LoggedInUsers    []string `json:"logged_in_users"`
}

// MetadataWrite is one queued local metadata write; an empty Value clears.
type MetadataWrite struct {
	FieldNumber int       `json:"field_number"`
	Value       string    `json:"value"`
	ModifiedAt  time.Time `json:"modified_at"`
}

// HeartbeatResponse answers PathHeartbeat.
type HeartbeatResponse struct {
	ServerTime        time.Time     `json:"server_time"`
	MetadataFieldAcks []MetadataAck `json:"metadata_field_acks"`
	// IntervalSeconds is the heartbeat cadence the Engine wants (20).
	IntervalSeconds int `json:"interval_seconds"`
	// DetailsWanted asks for a full details post on the next cycle (the
	// Engine has no inventory for this device, e.g. after a restore).
	DetailsWanted bool `json:"details_wanted,omitempty"`
	// ScriptSigning is the current script-signing trust; the agent
	// replaces its list when it differs (key rotation).
	ScriptSigning *ScriptTrust `json:"script_signing,omitempty"`
	// MetadataRevision and MetadataChangedFields are set when operators
	// changed this device's metadata after the agent's MetadataRevision:
	// the agent reads each changed field (PathAgentMetadata) and then
	// sends MetadataRevision with its next heartbeats (docs/agent.md
	// "Metadata sync").
	MetadataRevision      int64 `json:"metadata_revision,omitempty"`
	MetadataChangedFields []int `json:"metadata_changed_fields,omitempty"`
}

// MetadataAck acknowledges one write; ModifiedAt echoes the write's.
// Superseded: the Engine holds a newer value (the agent may read it).
// Rejected (with Superseded) names why the Engine refused the write (an
// invalid value): it leaves the queue all the same.
type MetadataAck struct {
	FieldNumber int       `json:"field_number"`
	ModifiedAt  time.Time `json:"modified_at"`
	Superseded  bool      `json:"superseded,omitempty"`
	Rejected    string    `json:"rejected,omitempty"`
}

// ---- Status (PathStatus) -----------------------------------------------

// Status is the startup timeline (SPEC "Agent-side behavior" item 3).
type Status struct {
	Phase        string `json:"phase"` // starting, running, stopping
	BootID       string `json:"boot_id"`
	AgentVersion string `json:"agent_version"`
	// BuildID is the running binary's build ID (agent/version.Build); the
	// Engine stores it as the device's agent_build_id. Older agents omit it.
	BuildID    string      `json:"build_id,omitempty"`
	StartedAt  time.Time   `json:"started_at"`
	Milestones []Milestone `json:"milestones"`
	LastError  *Telemetry  `json:"last_error,omitempty"`
	// Roles is the role health snapshot (SPEC "Agent role health snapshot").
	Roles []RoleHealth `json:"roles,omitempty"`
}

// Milestone is one step of the startup timeline.
type Milestone struct {
	Name   string    `json:"name"`
	At     time.Time `json:"at"`
	OK     bool      `json:"ok"`
	Detail string    `json:"detail,omitempty"`
}

// Telemetry is the last error the agent saw.
type Telemetry struct {
	Message string    `json:"message"`
	At      time.Time `json:"at"`
	Source  string    `json:"source,omitempty"`
}

// Role health values.
const (
	RoleHealthy    = "Healthy"
	RoleUnhealthy  = "Unhealthy"
	RoleRecovering = "Recovering"
)

// RoleHealth is one `system:<role>` row.
type RoleHealth struct {
	// Key is "system:<role>", e.g. "system:device_audit".
	Key string `json:"key"`
	// Desired is "running" or "stopped"; Observed is a RoleHealthy,
	// RoleUnhealthy or RoleRecovering label.
	Desired          string            `json:"desired"`
	Observed         string            `json:"observed"`
	LastCheckedAt    time.Time         `json:"last_checked_at"`
	LastHealthyAt    *time.Time        `json:"last_healthy_at,omitempty"`
	LastError        string            `json:"last_error,omitempty"`
	RecoveryAttempts int               `json:"recovery_attempts"`
	Context          map[string]string `json:"context,omitempty"`
}

// ---- Details (PathDetails) ---------------------------------------------

// Details is the body of PathDetails: the full inventory. Hash is the
// agent's inventory.Hash of Inventory: hex SHA-256 of its canonical JSON
// without the volatile parts (processes, uptime seconds, exact disk use;
// docs/agent.md "Inventory hash"), so an unchanged inventory is recognised
// without comparing it.
type Details struct {
	Hash        string       `json:"hash"`
	CollectedAt time.Time    `json:"collected_at"`
	Inventory   Inventory    `json:"inventory"`
	Roles       []RoleHealth `json:"roles,omitempty"`
}

// DetailsResponse answers PathDetails.
type DetailsResponse struct {
	Changed bool `json:"changed"`
}

// ---- Realtime socket ----------------------------------------------------

// Route answers PathRealtimeRoute: where this device's site worker takes
// its socket.
type Route struct {
	// URL is the absolute ws(s):// address of the socket.
	URL      string `json:"url"`
	SiteSlug string `json:"site_slug"`
	// Worker names the site worker (its task queue).
	Worker string `json:"worker"`
}

// Envelope is every message on the socket, both directions.
type Envelope struct {
	Type string `json:"type"`
	// ID correlates a request and its reply.
	ID string `json:"id,omitempty"`
	// OperationID names the Engine operation a request belongs to; it
	// stays the same when the Engine delivers the request again, so the
	// agent can answer a repeat without acting twice (protocol 2).
	OperationID string          `json:"operation_id,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	// Grant authorises a request with an OperationID (protocol 3; grant.go).
	Grant *Signed `json:"grant,omitempty"`
}

// Socket message types. Engine-to-agent event names are the spec's
// ("Engine to agent events"); these are the socket's own.
const (
	MsgConnectAgent    = "connect_agent"
	MsgConnectAgentAck = "connect_agent_ack"
	MsgPing            = "ping"
	MsgPong            = "pong"
	MsgReply           = "reply"
	// MsgDeviceCloned tells a connected agent that it is the copy of its
	// device (payload DeviceCloned); the agent enrolls again with the
	// ticket.
	MsgDeviceCloned = "device_cloned"
)

// ConnectAgent is the first message the agent sends.
type ConnectAgent struct {
	GUID         string `json:"guid"`
	AgentVersion string `json:"agent_version"`
	Protocol     int    `json:"protocol"`
	BootID       string `json:"boot_id"`
	// Fingerprint is the agent's hashed hardware fingerprint (as in
	// enrollment): when two live sockets of one device disagree, the one
	// that does not match the enrolled fingerprint is the copy.
	Fingerprint    string   `json:"fingerprint,omitempty"`
	HelperContexts []string `json:"helper_contexts"`
	// Capabilities is what this agent can be asked to do (protocol 4 and
	// later; capabilities.go). The Engine reads it through
	// ReportedCapabilities.
	Capabilities []Capability `json:"capabilities"`
}

// ReportedCapabilities is the set the Engine keeps for an agent that sent
// c: LegacyCapabilities below protocol 4 (whatever it sent), else the list
// as sent (absent or null: none).
func (c ConnectAgent) ReportedCapabilities() []Capability {
	if c.Protocol < CapabilitiesVersion {
		return LegacyCapabilities()
	}
	if c.Capabilities == nil {
		return []Capability{}
	}
	return c.Capabilities
}

// ConnectAgentAck is the site worker's answer. Only Accepted=true makes
// the agent count as connected (SPEC "Agent-side behavior" item 4).
type ConnectAgentAck struct {
	Accepted bool   `json:"accepted"`
	Reason   string `json:"reason,omitempty"`
	// Code says why a registration was refused, when the agent must act
	// on it: CodeDeviceCloned, with CloneTicket.
	Code        string `json:"code,omitempty"`
	CloneTicket string `json:"clone_ticket,omitempty"`
	Worker      string `json:"worker"`
	// PingIntervalSeconds is how often the worker sends ping; it stays well
	// under the agent's 60 s read-idle deadline.
	PingIntervalSeconds int `json:"ping_interval_seconds"`
	// Calls names the calls (calls.go) this worker answers on the socket,
	// for agents of protocol CallsVersion and later.
	Calls []string `json:"calls,omitempty"`
}

// DeviceCloned is the payload of MsgDeviceCloned.
type DeviceCloned struct {
	CloneTicket string `json:"clone_ticket"`
}
