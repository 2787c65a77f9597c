package proto

import "time"

// ---- Operations (Engine-to-agent requests over the realtime socket) -----
//
// The Engine sends an operation as an Envelope whose Type is one of the
// spec's event names below, with a fresh random ID per delivery attempt
// and OperationID naming the operation (stable across redeliveries). The
// agent answers with a MsgReply envelope carrying the same ID: the result
// below, or an Error {"error": code, "message"}. An agent that sees an
// OperationID it already answered answers again with the same result
// instead of acting twice (redelivery after a socket moved).

// Engine-to-agent event names (SPEC "Engine to agent events").
const (
	EventProcessManagement = "process_management_request"
	EventServiceControl    = "service_control_action"
	EventSoftwareRefresh   = "software_inventory_refresh_request"
	EventPatchRefresh      = "patch_inventory_refresh_request"
	// EventShellOpen asks the agent to start a shell and bridge it over a
	// dedicated WebSocket (ShellOpen); EventShellClose ends one.
	EventShellOpen  = "vpn_shell_open"
	EventShellClose = "vpn_shell_close"
)

// Error codes an agent answers operations with (besides CodeUnsupported in
// the runtime: "unsupported").
const (
	CodeOpUnsupported    = "unsupported"       // not on this platform or agent
	CodeOpNotFound       = "not_found"         // no such process or service
	CodeOpMismatch       = "process_mismatch"  // the PID now belongs to another process name
	CodeOpInvalid        = "invalid_request"   // the payload is malformed
	CodeOpFailed         = "failed"            // the action ran and failed
	CodeOpPermission     = "permission_denied" // the OS refused
	CodeOpShellLimit     = "shell_limit"       // too many shells on this agent
	CodeOpTimedOut       = "timed_out"         // the action did not finish in time
	CodeOpAlreadyRunning = "already_running"
)

// ProcessRequest is the payload of EventProcessManagement.
type ProcessRequest struct {
	// Action is "list" or "terminate".
	Action string `json:"action"`
	PID    int    `json:"pid,omitempty"`
	// Name must match the process's current name for terminate: a PID
	// reused by another program is refused with CodeOpMismatch.
	Name string `json:"name,omitempty"`
}

// Process actions.
const (
	ProcessList      = "list"
	ProcessTerminate = "terminate"
)

// ProcessSnapshot answers a list request.
type ProcessSnapshot struct {
	CapturedAt time.Time `json:"captured_at"`
	Processes  []Process `json:"processes"`
}

// ProcessTerminated answers a terminate request once the process is gone
// (SIGTERM, then SIGKILL after a grace period on Linux).
type ProcessTerminated struct {
	PID        int    `json:"pid"`
	Name       string `json:"name"`
	Terminated bool   `json:"terminated"`
	// Signal is the last signal sent (Linux), e.g. "SIGTERM" or "SIGKILL".
	Signal string `json:"signal,omitempty"`
}

// ServiceActionRequest is the payload of EventServiceControl.
type ServiceActionRequest struct {
	Name string `json:"name"`
	// Action is "start", "stop" or "restart".
	Action string `json:"action"`
}

// Service actions.
const (
	ServiceStart   = "start"
	ServiceStop    = "stop"
	ServiceRestart = "restart"
)

// ServiceActionResult answers EventServiceControl with the service as it
// is after the action, plus the whole service list so the Engine can
// refresh its cached inventory in the same round trip.
type ServiceActionResult struct {
	Name     string    `json:"name"`
	State    string    `json:"state"`
	Service  Service   `json:"service"`
	Services []Service `json:"services"`
}

// SoftwareRefreshResult answers EventSoftwareRefresh.
type SoftwareRefreshResult struct {
	CollectedAt time.Time  `json:"collected_at"`
	Software    []Software `json:"software"`
}

// PatchRefreshResult answers EventPatchRefresh.
type PatchRefreshResult struct {
	CollectedAt time.Time    `json:"collected_at"`
	Patches     []PatchEntry `json:"patches"`
	// Status is the scan's machine-wide result (nil from older agents).
	Status *PatchStatus `json:"status,omitempty"`
}

// ShellOpen is the payload of EventShellOpen. The agent dials URL (a
// ws(s):// address on the Engine, PathShellSocket with the session ID)
// with its usual Device auth (DPoP-bound access token and proof) plus
// HeaderShellToken: Token, then bridges a PTY running the privileged
// account's login shell. On that socket binary frames are terminal bytes
// in both directions; text frames are ShellControl JSON. It replies
// {"opened": true} once the socket is up.
type ShellOpen struct {
	SessionID string `json:"session_id"`
	URL       string `json:"url"`
	Token     string `json:"token"`
	Cols      int    `json:"cols"`
	Rows      int    `json:"rows"`
	// IdleTimeoutSeconds ends a shell with no traffic either way.
	IdleTimeoutSeconds int `json:"idle_timeout_seconds"`
}

// ShellOpened answers EventShellOpen.
type ShellOpened struct {
	Opened bool   `json:"opened"`
	Shell  string `json:"shell,omitempty"` // e.g. /bin/bash
	PID    int    `json:"pid,omitempty"`
}

// ShellClose is the payload of EventShellClose.
type ShellClose struct {
	SessionID string `json:"session_id"`
}

// ShellControl is a text frame on the shell socket: "resize" (Engine to
// agent: Cols, Rows) and "exit" (agent to Engine: Code, once the shell
// ended; the agent then closes the socket normally). An exit the agent
// caused itself, not the shell, carries Reason (e.g. the remote_shell role
// was stopped), which the Engine records as the session's close reason
// and shows the operator.
type ShellControl struct {
	Type   string `json:"type"`
	Cols   int    `json:"cols,omitempty"`
	Rows   int    `json:"rows,omitempty"`
	Code   int    `json:"code"`
	Reason string `json:"reason,omitempty"`
}

// ShellReasonRoleStopped is the exit reason of a shell the agent ended
// because an operator stopped the remote_shell role.
const ShellReasonRoleStopped = "the remote_shell role was stopped on this device"

// Shell control types.
const (
	ShellResize = "resize"
	ShellExit   = "exit"
)

// Shell socket path and header.
const (
	// PathShellSocket is the agent's side of a shell session:
	// PathShellSocket + "/" + session ID.
	PathShellSocket  = "/api/agent/shell"
	HeaderShellToken = "X-Cairn-Shell-Token"
)

// ---- Patch installs (SPEC agent behaviour 10) ----------------------------

// EventPatchInstall asks the agent to install one patch (PatchInstallRequest)
// and answers PatchInstallResult once the attempt ended. The Engine's patch
// lane sends one at a time per device and re-scans after each.
const EventPatchInstall = "patch_install_request"

// PathPatchInstallProgress is where the agent posts PatchInstallProgress
// while an install runs (Device auth).
const PathPatchInstallProgress = "/api/agent/patches/install-progress"

// PatchInstallRequest names the patch to install: by update identity and
// revision first (Windows), then KB or title; on Linux by package (and
// the candidate version the Engine saw, which is not pinned: the
// package manager installs the newest it has).
type PatchInstallRequest struct {
	InstallID      string `json:"install_id"`
	ScheduledJobID *int64 `json:"scheduled_job_id,omitempty"`
	RunID          string `json:"run_id,omitempty"`
	PatchKey       string `json:"patch_key"`
	KB             string `json:"kb,omitempty"`
	UpdateID       string `json:"update_id,omitempty"`
	Revision       int    `json:"revision,omitempty"`
	Title          string `json:"title,omitempty"`
	Package        string `json:"package,omitempty"`
	Version        string `json:"version,omitempty"`
}

// Patch install outcomes (PatchInstallResult.Status).
const (
	PatchInstallDone    = "installed"
	PatchInstallAlready = "already_installed"
	PatchInstallFailed  = "failed"
)

// PatchInstallResult answers EventPatchInstall. Installed means the
// package manager reported success; the Engine says "installed" only
// after the re-scan that follows shows it.
type PatchInstallResult struct {
	Status           string `json:"status"`
	AlreadyInstalled bool   `json:"already_installed"`
	ExitCode         *int   `json:"exit_code,omitempty"`
	Message          string `json:"message,omitempty"`
	// LogExcerpt is the end of the package manager's output on failure
	// (at most MaxPatchLogExcerpt bytes).
	LogExcerpt     string `json:"log_excerpt,omitempty"`
	RebootRequired bool   `json:"reboot_required"`
}

// MaxPatchLogExcerpt bounds PatchInstallResult.LogExcerpt.
const MaxPatchLogExcerpt = 4096

// Patch install phases (PatchInstallProgress.Phase).
const (
	PatchPhaseStarting    = "starting"
	PatchPhaseDownloading = "downloading"
	PatchPhaseInstalling  = "installing"
	PatchPhaseFinished    = "finished"
)

// PatchInstallProgress is one progress report (SPEC "Agent update
// operation": scheduled job and run IDs, KB or update identity, phase,
// percent, message, captured timestamp).
type PatchInstallProgress struct {
	InstallID      string    `json:"install_id"`
	ScheduledJobID *int64    `json:"scheduled_job_id,omitempty"`
	RunID          string    `json:"run_id,omitempty"`
	KB             string    `json:"kb,omitempty"`
	UpdateID       string    `json:"update_id,omitempty"`
	Package        string    `json:"package,omitempty"`
	Phase          string    `json:"phase"`
	Percent        int       `json:"percent"`
	Message        string    `json:"message,omitempty"`
	CapturedAt     time.Time `json:"captured_at"`
}

// ---- Patch reboots (SPEC agent behaviour 10) -----------------------------

// EventPatchReboot asks the agent to reboot the machine after patch
// installs (PatchRebootRequest); it answers PatchRebootResult. The
// Engine's patch lane sends it after the installs queued before it, never
// during one.
const EventPatchReboot = "patch_reboot_request"

// PatchRebootRequest is one reboot. Forced is set only by a patch policy
// that forces reboots: it reboots with users signed in. WhenRequired
// reboots only when the machine says it needs one (/var/run/reboot-required,
// needs-restarting -r, Windows Update's reboot flag).
type PatchRebootRequest struct {
	RebootID     string `json:"reboot_id"`
	WhenRequired bool   `json:"when_required"`
	Forced       bool   `json:"forced"`
}

// Patch reboot outcomes (PatchRebootResult.Status).
const (
	PatchRebootScheduled       = "scheduled"
	PatchRebootSkippedLoggedIn = "skipped_logged_in_user"
	PatchRebootNotRequired     = "not_required"
)

// PatchRebootResult answers EventPatchReboot: scheduled (the reboot is
// handed to the OS, a minute from now), skipped_logged_in_user (with the
// signed-in users) or not_required.
type PatchRebootResult struct {
	Status   string   `json:"status"`
	Message  string   `json:"message,omitempty"`
	SignedIn []string `json:"signed_in,omitempty"`
}

// ---- Patch policy enforcement (SPEC agent behaviour 11) -------------------

// EventPatchPolicyEnforcement asks a Windows agent to put the machine's
// Windows Update policy in a patch policy's enforcement mode
// (PatchPolicyEnforcementRequest); it answers
// PatchPolicyEnforcementResult. The Engine's patch lane sends it when a
// device's effective mode changes and on a device's first evaluation.
const EventPatchPolicyEnforcement = "patch_policy_enforcement_request"

// Patch policy enforcement modes. Managed and frozen back up the Windows
// Update policy values the agent sets and set ones that stop automatic
// installs (frozen also stops automatic downloads and notifications);
// unmanaged restores what the backup holds, "absent" included.
const (
	PatchModeUnmanaged = "unmanaged"
	PatchModeManaged   = "managed"
	PatchModeFrozen    = "frozen"
)

// PatchModes lists the enforcement modes.
var PatchModes = []string{PatchModeUnmanaged, PatchModeManaged, PatchModeFrozen}

// PatchPolicyEnforcementRequest is one enforcement.
type PatchPolicyEnforcementRequest struct {
	EnforcementID string `json:"enforcement_id"`
	Mode          string `json:"mode"`
}

// Patch enforcement outcomes (PatchPolicyEnforcementResult.Status).
const (
	// PatchEnforcementApplied: managed or frozen values are set (the
	// original ones are backed up).
	PatchEnforcementApplied = "applied"
	// PatchEnforcementRestored: unmanaged, the backed-up values are back
	// and the backup is gone.
	PatchEnforcementRestored = "restored"
	// PatchEnforcementNotManaged: unmanaged asked of a machine the agent
	// never managed: nothing changed.
	PatchEnforcementNotManaged = "not_managed"
)

// PatchPolicyValue is one Windows Update policy value as the enforcement
// left it: Present false when it does not exist; Data in the registry
// editor's wire form (agent/proto/registry.go).
type PatchPolicyValue struct {
	Key     string `json:"key"`
	Name    string `json:"name"`
	Present bool   `json:"present"`
	Type    string `json:"type,omitempty"`
	Data    any    `json:"data,omitempty"`
}

// PatchPolicyEnforcementResult answers EventPatchPolicyEnforcement: the
// mode now in force on the machine and the policy values as they are.
type PatchPolicyEnforcementResult struct {
	Mode    string             `json:"mode"`
	Status  string             `json:"status"`
	Message string             `json:"message,omitempty"`
	Values  []PatchPolicyValue `json:"values"`
}
