package inventory

import (
	"time"

	"github.com/cairn-rmm/cairn/agent/roles"
)

// platformParts are the Linux collectors, in the order Collect runs them.
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
