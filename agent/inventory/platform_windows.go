package inventory

import (
	"context"
	"errors"
	"time"

	"github.com/cairn-rmm/cairn/agent/patches"
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

// collectPatches reads the Windows Update Agent over COM (agent/patches):
// pending updates, the update history and QFE, de-duplicated KB first,
// and whether Windows waits for a reboot.
func collectPatches(ctx context.Context, _ *Collector, inv *proto.Inventory) error {
	s, err := patches.Detect().Scan(ctx)
	if errors.Is(err, patches.ErrNoWUA) {
		return roles.Unsupported("%s", err.Error())
	}
	if err != nil {
		return err
	}
	st := s.Status
	inv.Patches, inv.PatchStatus = orEmpty(s.Rows()), &st
	return nil
}
