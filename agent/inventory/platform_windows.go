package inventory

import (
	"context"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// systemdBooted: systemd is Linux's.
func systemdBooted() bool { return false }

// platformParts are the Windows collectors, in the order Collect runs them.
func platformParts() []part {
	return []part{
		{roles.DeviceAudit, "os", 10 * time.Second, collectOS},
		{roles.DeviceAudit, "hardware", 30 * time.Second, collectHardware},
		{roles.DeviceAudit, "network", 10 * time.Second, collectNetwork},
		{roles.DeviceAudit, "uptime", 5 * time.Second, collectUptime},
		{roles.CurrentUser, "sessions", 15 * time.Second, collectSessions},
		{roles.SoftwareManagement, "software", time.Minute, collectSoftware},
		{roles.ServiceManagement, "services", 30 * time.Second, collectServices},
		{roles.ProcessManagement, "processes", 30 * time.Second, collectProcesses},
		{roles.PatchManagement, "patches", 3 * time.Minute, collectPatches},
	}
}

// collectPatches: pending Windows updates come from the Windows Update
// Agent, a COM API this agent does not drive yet (and Wine does not
// implement). Saying so keeps the patch rows the Engine has instead of
// replacing them with an empty list.
func collectPatches(context.Context, *Collector, *proto.Inventory) error {
	return roles.Unsupported("pending Windows updates are not collected yet (Windows Update Agent)")
}
