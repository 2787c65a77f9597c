package inventory

import (
	"testing"

	"github.com/coreos/go-systemd/v22/dbus"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

func TestServicesFromDBus(t *testing.T) {
	t.Parallel()
	units := unitsFromDBus([]dbus.UnitStatus{
		{Name: "ssh.service", Description: "OpenBSD Secure Shell server", LoadState: "loaded", ActiveState: "active", SubState: "running"},
		{Name: "getty@tty1.service", Description: "Getty on tty1", LoadState: "loaded", ActiveState: "active", SubState: "running"},
	})
	files := unitFilesFromDBus([]dbus.UnitFile{
		{Path: "/usr/lib/systemd/system/ssh.service", Type: "enabled"},
		{Path: "/usr/lib/systemd/system/getty@.service", Type: "enabled"},
		{Path: "/etc/systemd/system/backup.service", Type: "disabled"},
	})
	require.Equal(t, []proto.Service{
		{Name: "backup.service", State: "stopped", SubState: "dead", ActiveState: "inactive", StartMode: "disabled"},
		{Name: "getty@tty1.service", State: "running", SubState: "running", LoadState: "loaded", ActiveState: "active",
			StartMode: "enabled", Description: "Getty on tty1"},
		{Name: "ssh.service", State: "running", SubState: "running", LoadState: "loaded", ActiveState: "active",
			StartMode: "enabled", Description: "OpenBSD Secure Shell server"},
	}, mergeServices(units, files), "D-Bus and systemctl feed the same merge")
}
