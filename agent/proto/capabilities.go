package proto

import "slices"

// ---- Capabilities (what an agent can be asked to do) ---------------------
//
// An agent of protocol 4 or later lists its capabilities in connect_agent
// (ConnectAgent.Capabilities); the Engine stores the set per device on each
// connect and refuses, before any workflow starts, a request that needs a
// capability the device's agent lacks: 409 agent_too_old naming the
// capability and the protocol that brought it (docs/api.md "Agent
// capabilities"). The agent decides its set, not the Engine: the registry
// editor is listed only by Windows agents.

// Capability names one kind of request an agent answers. The names are the
// wire's; never rename one.
type Capability string

// The capabilities, one per kind of operation the agent handles.
const (
	// CapProcesses: process_management_request (list, terminate).
	CapProcesses Capability = "processes"
	// CapServices: service_control_action.
	CapServices Capability = "services"
	// CapInventoryRefresh: software_inventory_refresh_request and
	// patch_inventory_refresh_request.
	CapInventoryRefresh Capability = "inventory_refresh"
	// CapShell: vpn_shell_open and vpn_shell_close.
	CapShell Capability = "shell"
	// CapAgentUpdate: agent_update_request.
	CapAgentUpdate Capability = "agent_update"
	// CapScripts: quick_job_run and the queued script work it polls for.
	CapScripts Capability = "scripts"
	// CapFiles: file_management_request, the file manager's actions.
	CapFiles Capability = "files"
	// CapTransfers: file_management_request actions upload and download.
	CapTransfers Capability = "transfers"
	// CapRegistry: registry_management_request (Windows agents only).
	CapRegistry Capability = "registry"
	// CapPatchInstall: patch_install_request (Linux agents with apt or
	// dnf, Windows agents through the Windows Update Agent).
	CapPatchInstall Capability = "patch_install"
	// CapTunnel: vpn_tunnel_start, the managed WireGuard tunnel.
	CapTunnel Capability = "tunnel"
	// CapPatchReboot: patch_reboot_request (Linux and Windows agents).
	CapPatchReboot Capability = "patch_reboot"
	// CapVNC: vnc_start, vnc_stop, vnc_credential_request (Linux agents
	// with X11 and x11vnc, Windows agents with their own RFB server).
	CapVNC Capability = "vnc"
	// CapRDP: rdp_start, rdp_transport_recovery (Linux agents: an RDP
	// server such as xrdp on the host; Windows agents: TermService).
	CapRDP Capability = "rdp"
	// CapRoleControl: role_desired_state, stopping and starting roles.
	CapRoleControl Capability = "role_control"
	// CapAnsible: quick_job_run of an Ansible playbook (LangAnsible), run
	// by ansible-playbook against localhost (Linux agents; the agent
	// answers ansible_unavailable where the binary is missing).
	CapAnsible Capability = "ansible"
	// CapRedeploy: agent_redeploy_request, a redeploy with a new
	// enrollment code (agent behaviour 16).
	CapRedeploy Capability = "redeploy"
	// CapPatchEnforcement: patch_policy_enforcement_request (Windows
	// agents only: it sets Windows Update policy values).
	CapPatchEnforcement Capability = "patch_enforcement"
)

// AllCapabilities lists every capability in the order agents report them.
var AllCapabilities = []Capability{CapProcesses, CapServices, CapInventoryRefresh, CapShell, CapAgentUpdate,
	CapScripts, CapFiles, CapTransfers, CapRegistry, CapPatchInstall, CapTunnel, CapVNC, CapRoleControl, CapPatchReboot, CapAnsible, CapRedeploy,
	CapPatchEnforcement, CapRDP}

// CapabilityVersion is the first protocol whose agents are known to have
// a capability. Agents before protocol 4 report no set and are given
// LegacyCapabilities; every other capability is known only from protocol
// 4, the first to report it, so an older agent asked for one is told to
// update (agent releases carry no other version the Engine could name).
var CapabilityVersion = map[Capability]int{
	CapProcesses:        2,
	CapServices:         2,
	CapInventoryRefresh: 2,
	CapShell:            2,
	CapAgentUpdate:      2,
	CapScripts:          3,
	CapFiles:            CapabilitiesVersion,
	CapTransfers:        CapabilitiesVersion,
	CapRegistry:         CapabilitiesVersion,
	CapPatchInstall:     CapabilitiesVersion,
	CapTunnel:           CapabilitiesVersion,
	CapVNC:              CapabilitiesVersion,
	CapRoleControl:      CapabilitiesVersion,
	CapPatchReboot:      CapabilitiesVersion,
	CapAnsible:          CapabilitiesVersion,
	CapRedeploy:         CapabilitiesVersion,
	CapPatchEnforcement: CapabilitiesVersion,
	CapRDP:              CapabilitiesVersion,
}

// CapabilitiesVersion is the protocol that reports capabilities.
const CapabilitiesVersion = 4

// LegacyCapabilities is the set the Engine gives an agent that reports
// none (protocol 1 to 3), and a device whose agent has not connected since
// the Engine learned capabilities: the operations protocol 2 introduced
// (operations.go: processes, services, inventory refreshes, the shell),
// agent updates, which every later build gets through and which brings
// the agent to a protocol that reports its set, and signed scripts, which
// protocol 3 made the protocol (an offline device's queued and scheduled
// work must not fail only because it has not reconnected since the
// Engine's upgrade; a protocol-2 agent answers a script "unsupported").
// Builds of protocol 2 and 3 may have had more (files, transfers, the
// registry editor), but not all of them: those need an agent of protocol 4.
func LegacyCapabilities() []Capability {
	return []Capability{CapProcesses, CapServices, CapInventoryRefresh, CapShell, CapAgentUpdate, CapScripts}
}

// Capability limits on the wire: more, or longer names, refuse the
// connect_agent.
const (
	MaxCapabilities     = 64
	MaxCapabilityLength = 64
)

// CapabilityPlatform names the only platforms whose agents have a
// capability, for the ones that are not everywhere.
var CapabilityPlatform = map[Capability][]string{CapRegistry: {"windows"}, CapVNC: {"linux", "windows"}, CapAnsible: {"linux"},
	CapPatchEnforcement: {"windows"}, CapRDP: {"linux", "windows"}}

// AgentCapabilities is the set an agent of this protocol built for goos
// reports: every capability but those CapabilityPlatform keeps to other
// platforms.
func AgentCapabilities(goos string) []Capability {
	var out []Capability
	for _, c := range AllCapabilities {
		if p, only := CapabilityPlatform[c]; only && !slices.Contains(p, goos) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// EventCapability is the capability each request type needs; a
// file_management_request of action upload or download needs CapTransfers
// instead (TransferActions).
var EventCapability = map[string]Capability{
	EventProcessManagement:      CapProcesses,
	EventServiceControl:         CapServices,
	EventSoftwareRefresh:        CapInventoryRefresh,
	EventPatchRefresh:           CapInventoryRefresh,
	EventShellOpen:              CapShell,
	EventShellClose:             CapShell,
	EventAgentUpdate:            CapAgentUpdate,
	EventQuickJobRun:            CapScripts,
	EventFileManagement:         CapFiles,
	EventRegistryManagement:     CapRegistry,
	EventPatchInstall:           CapPatchInstall,
	EventPatchReboot:            CapPatchReboot,
	EventVPNTunnelStart:         CapTunnel,
	EventVNCStart:               CapVNC,
	EventVNCStop:                CapVNC,
	EventVNCCredentialRequest:   CapVNC,
	EventVNCRefresh:             CapVNC,
	EventRoleDesiredState:       CapRoleControl,
	EventAgentRedeploy:          CapRedeploy,
	EventPatchPolicyEnforcement: CapPatchEnforcement,
	EventRDPStart:               CapRDP,
	EventRDPTransportRecovery:   CapRDP,
}

// HandlerCapabilities maps the request types an agent has handlers for to
// the capabilities they give (the file_management_request handler gives
// both files and transfers), in AllCapabilities' order without repeats.
func HandlerCapabilities(types []string) []Capability {
	has := map[Capability]bool{}
	for _, t := range types {
		if c, ok := EventCapability[t]; ok {
			has[c] = true
		}
		if t == EventFileManagement {
			has[CapTransfers] = true
		}
		// The script runner runs playbooks too (where the platform has
		// Ansible: CapabilityPlatform).
		if t == EventQuickJobRun {
			has[CapAnsible] = true
		}
	}
	var out []Capability
	for _, c := range AllCapabilities {
		if has[c] {
			out = append(out, c)
		}
	}
	return out
}

// HasCapability reports whether set holds c.
func HasCapability(set []Capability, c Capability) bool { return slices.Contains(set, c) }
