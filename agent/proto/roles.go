package proto

// Role health row keys (SPEC "Agent role health snapshot"): "system:" and
// the role. The Engine groups RoleKeyAPIWebSocket and RoleKeyVPNTunnel as
// "Agent Connection" and keeps RoleKeyStartup for the startup timeline,
// which only the status post writes.
const (
	RoleKeyStartup            = "system:system_heartbeat"
	RoleKeyAPIWebSocket       = "system:api_websocket"
	RoleKeyVPNTunnel          = "system:vpn_tunnel"
	RoleKeySystemContext      = "system:system_context"
	RoleKeyCurrentUser        = "system:current_user"
	RoleKeyDeviceAudit        = "system:device_audit"
	RoleKeyFileManagement     = "system:file_management"
	RoleKeyPatchManagement    = "system:patch_management"
	RoleKeyProcessManagement  = "system:process_management"
	RoleKeyRegistryManagement = "system:registry_management"
	RoleKeyServiceManagement  = "system:service_management"
	RoleKeySoftwareManagement = "system:software_management"
	RoleKeyRemoteShell        = "system:remote_shell"
	RoleKeyVNC                = "system:vnc"
	RoleKeyRDP                = "system:rdp"
)

// EventRoleDesiredState asks the agent to stop or start one role
// (RoleDesiredStateRequest). The agent stores the desired state in
// agent.json (roles_stopped), so it outlives restarts, and answers
// RoleDesiredStateResult. A stopped role's requests are refused with
// CodeRoleStopped.
const EventRoleDesiredState = "role_desired_state"

// Desired states of a role.
const (
	RoleDesiredRunning = "running"
	RoleDesiredStopped = "stopped"
)

// RoleStopped is the observed state of a role stopped on purpose.
const RoleStopped = "Stopped"

// Codes of the role control path.
const (
	// CodeRoleStopped: the request belongs to a role an operator stopped.
	CodeRoleStopped = "role_stopped"
	// CodeRoleNotStoppable: the role cannot be stopped (the agent's own
	// process and its connection to the Engine, or a role with nothing
	// the agent could stop).
	CodeRoleNotStoppable = "role_not_stoppable"
)

// StoppableRoles are the roles an operator may stop, each with the
// request types a stopped role refuses (CodeRoleStopped). Every other
// role, and system_context, api_websocket and vpn_tunnel in particular,
// is refused with CodeRoleNotStoppable.
var StoppableRoles = map[string][]string{
	"remote_shell":        {EventShellOpen},
	"file_management":     {EventFileManagement},
	"process_management":  {EventProcessManagement},
	"service_management":  {EventServiceControl},
	"software_management": {EventSoftwareRefresh},
	"patch_management":    {EventPatchRefresh, EventPatchInstall},
	"registry_management": {EventRegistryManagement},
	"vnc":                 {EventVNCStart, EventVNCCredentialRequest, EventVNCRefresh},
}

// RoleDesiredStateRequest is the payload of EventRoleDesiredState: Role
// without the "system:" prefix, Desired a RoleDesired* value.
type RoleDesiredStateRequest struct {
	Role    string `json:"role"`
	Desired string `json:"desired"`
}

// RoleDesiredStateResult answers EventRoleDesiredState with the role's
// row as it is after the change.
type RoleDesiredStateResult struct {
	Role     string `json:"role"`
	Desired  string `json:"desired"`
	Observed string `json:"observed"`
}

// RoleNames lists every role the spec knows ("Agent role health
// snapshot"), in the spec's order; agent/roles names each one. The Engine
// validates role names against it without importing the agent's roles.
var RoleNames = []string{
	"system_context", "current_user", "device_audit", "file_management", "patch_management",
	"process_management", "registry_management", "service_management", "software_management",
	"vpn_tunnel", "remote_shell", "vnc", "rdp",
}

// ConnectionRoles are the health rows published beside the roles: the
// agent's connection to the Engine (system:api_websocket).
var ConnectionRoles = []string{"api_websocket"}
