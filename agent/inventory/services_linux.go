package inventory

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/coreos/go-systemd/v22/dbus"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// collectServices lists systemd's service units with their states, over
// D-Bus (the system bus, or systemd's private socket as root) and with
// systemctl when D-Bus is unavailable. Without systemd as init, the SysV
// init scripts in Options.InitDir are the services; with neither there is
// no service manager this agent knows, which is reported, not hidden
// behind an empty list.
func collectServices(ctx context.Context, c *Collector, inv *proto.Inventory) error {
	if c.UsesInitScripts() {
		svcs, err := sysvServices(ctx, c.opts.InitDir)
		if err != nil {
			return err
		}
		inv.Services = svcs
		return nil
	}
	units, files, err := servicesDBus(ctx)
	if err != nil {
		var serr error
		if units, files, serr = servicesSystemctl(ctx); serr != nil {
			return fmt.Errorf("systemd D-Bus: %v; systemctl: %w", err, serr)
		}
	}
	inv.Services = mergeServices(units, files)
	return nil
}

func servicesDBus(ctx context.Context) ([]unit, map[string]string, error) {
	conn, err := dbus.NewWithContext(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	patterns := []string{"*.service"}
	us, err := conn.ListUnitsByPatternsContext(ctx, nil, patterns)
	if err != nil {
		return nil, nil, err
	}
	fs, err := conn.ListUnitFilesByPatternsContext(ctx, nil, patterns)
	if err != nil {
		return nil, nil, err
	}
	return unitsFromDBus(us), unitFilesFromDBus(fs), nil
}

func servicesSystemctl(ctx context.Context) ([]unit, map[string]string, error) {
	out, _, err := command(ctx, nil, "systemctl", "list-units", "--type=service", "--all",
		"--no-legend", "--no-pager", "--plain", "--full")
	if err != nil {
		return nil, nil, err
	}
	files, _, err := command(ctx, nil, "systemctl", "list-unit-files", "--type=service",
		"--no-legend", "--no-pager", "--full")
	if err != nil {
		return nil, nil, err
	}
	return parseSystemctlUnits(out), parseSystemctlUnitFiles(files), nil
}

func unitsFromDBus(us []dbus.UnitStatus) []unit {
	out := make([]unit, 0, len(us))
	for _, u := range us {
		out = append(out, unit{Name: u.Name, Load: u.LoadState, Active: u.ActiveState, Sub: u.SubState, Description: u.Description})
	}
	return out
}

// unitFilesFromDBus maps unit file names to their state; D-Bus gives the
// file's path, systemctl its name.
func unitFilesFromDBus(fs []dbus.UnitFile) map[string]string {
	out := make(map[string]string, len(fs))
	for _, f := range fs {
		out[filepath.Base(f.Path)] = f.Type
	}
	return out
}
