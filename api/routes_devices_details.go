package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devices"
)

// deviceDetailsJSON is GET /api/device/details/{hostname}. Collections the
// agent never reported are null; the inventory shapes are the agent's
// (agent/proto), normalized.
type deviceDetailsJSON struct {
	Device    deviceSummaryJSON `json:"device"`
	Hardware  *proto.Hardware   `json:"hardware"`
	OS        *proto.OSInfo     `json:"os"`
	Network   []proto.NetIface  `json:"network" openapi:"nullable"`
	Sessions  []proto.Session   `json:"sessions" openapi:"nullable"`
	Uptime    *uptimeJSON       `json:"uptime"`
	Software  []proto.Software  `json:"software" openapi:"nullable"`
	Services  []proto.Service   `json:"services" openapi:"nullable"`
	Processes []proto.Process   `json:"processes" openapi:"nullable"`
	// ProcessCommandLinesRedacted: the processes' command lines are left
	// out, as the caller is a read API token without read:device-content.
	ProcessCommandLinesRedacted bool                  `json:"process_command_lines_redacted"`
	Patches                     []patchJSON           `json:"patches" openapi:"nullable"`
	AgentHealth                 agentHealthJSON       `json:"agent_health"`
	Metrics                     *proto.Metrics        `json:"metrics"`
	LastStatus                  *devices.StatusRecord `json:"last_status"`
	CollectedAt                 *time.Time            `json:"collected_at"`
	InventoryUpdatedAt          *time.Time            `json:"inventory_updated_at"`
}

type uptimeJSON struct {
	BootTime      time.Time `json:"boot_time"`
	BootID        string    `json:"boot_id"`
	UptimeSeconds int64     `json:"uptime_seconds"`
}

type patchJSON struct {
	PatchKey         string     `json:"patch_key"`
	KB               string     `json:"kb"`
	Title            string     `json:"title"`
	UpdateID         string     `json:"update_id"`
	Revision         int32      `json:"revision"`
	State            string     `json:"state"`
	Source           string     `json:"source"`
	Package          string     `json:"package"`
	InstalledVersion string     `json:"installed_version"`
	CandidateVersion string     `json:"candidate_version"`
	Severity         string     `json:"severity"`
	InstalledAt      *time.Time `json:"installed_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
}

type roleJSON struct {
	Key              string          `json:"key"`
	Role             string          `json:"role"`
	Desired          string          `json:"desired"`
	Observed         string          `json:"observed"`
	LastCheckedAt    *time.Time      `json:"last_checked_at"`
	LastHealthyAt    *time.Time      `json:"last_healthy_at"`
	LastError        string          `json:"last_error"`
	RecoveryAttempts int32           `json:"recovery_attempts"`
	Context          json.RawMessage `json:"context" openapi:"types=object"`
	UpdatedAt        time.Time       `json:"updated_at"`
}

// agentHealthJSON is the Agent Health tab: the startup timeline, the
// "Agent Connection" group (API WebSocket and VPN tunnel) and the other
// roles, which do not repeat the connection roles.
type agentHealthJSON struct {
	Startup         *roleJSON  `json:"startup"`
	AgentConnection []roleJSON `json:"agent_connection"`
	Roles           []roleJSON `json:"roles"`
}

func newRoleJSON(r devices.Role) roleJSON {
	return roleJSON{Key: r.Key, Role: r.Name(), Desired: r.Desired, Observed: r.Observed, LastCheckedAt: r.LastCheckedAt,
		LastHealthyAt: r.LastHealthyAt, LastError: r.LastError, RecoveryAttempts: r.RecoveryAttempts, Context: r.Context, UpdatedAt: r.UpdatedAt}
}

func newRolesJSON(rs []devices.Role) []roleJSON {
	out := make([]roleJSON, len(rs))
	for i, r := range rs {
		out[i] = newRoleJSON(r)
	}
	return out
}

func (s *Server) deviceDetails(r *http.Request) (deviceDetailsJSON, error) {
	d, err := s.Devices.DetailsByHostname(r.Context(), principal(r.Context()).SiteScope(), pathParam(r, "hostname"))
	if err != nil {
		return deviceDetailsJSON{}, err
	}
	out := deviceDetailsJSON{
		Device: newDeviceSummaryJSON(d.Device), Hardware: d.Hardware, OS: d.OS, Network: d.Network, Sessions: d.Sessions,
		Software: d.Software, Services: d.Services, Metrics: d.Device.Metrics, LastStatus: d.LastStatus,
		CollectedAt: d.CollectedAt, InventoryUpdatedAt: d.InventoryUpdatedAt,
		AgentHealth: agentHealthJSON{AgentConnection: newRolesJSON(d.Health.AgentConnection), Roles: newRolesJSON(d.Health.Roles)},
	}
	out.Processes, out.ProcessCommandLinesRedacted = visibleProcesses(principal(r.Context()), d.Processes)
	if d.Uptime != nil {
		out.Uptime = &uptimeJSON{BootTime: d.Uptime.BootTime, BootID: d.Uptime.BootID, UptimeSeconds: d.Uptime.UptimeSeconds}
	}
	if d.Health.Startup != nil {
		st := newRoleJSON(*d.Health.Startup)
		out.AgentHealth.Startup = &st
	}
	out.Patches = newPatchesJSON(d.Patches)
	return out, nil
}

// newPatchesJSON is the wire form of stored patch rows (nil stays nil:
// never reported).
func newPatchesJSON(rows []devices.PatchRow) []patchJSON {
	if rows == nil {
		return nil
	}
	out := make([]patchJSON, len(rows))
	for i, p := range rows {
		out[i] = patchJSON{PatchKey: p.Key, KB: p.KB, Title: p.Title, UpdateID: p.UpdateID, Revision: p.Revision,
			State: p.State, Source: p.Source, Package: p.Package, InstalledVersion: p.InstalledVersion,
			CandidateVersion: p.CandidateVersion, Severity: p.Severity, InstalledAt: p.InstalledAt, UpdatedAt: p.UpdatedAt}
	}
	return out
}
