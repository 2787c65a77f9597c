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
