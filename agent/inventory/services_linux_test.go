package inventory

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/coreos/go-systemd/v22/dbus"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
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

func TestSysVServices(t *testing.T) {
	t.Parallel()
	etc := t.TempDir()
	dir := filepath.Join(etc, "init.d")
	require.NoError(t, os.Mkdir(dir, 0o755))
	for name, body := range map[string]string{
		"web":          "### BEGIN INIT INFO\n# Short-Description: the web server\n### END INIT INFO\nexit 0",
		"db":           "exit 3",
		"broken":       "exit 4",
		"hangs":        "exec sleep 3600",
		"README":       "exit 0",
		".hidden":      "exit 0",
		"web.dpkg-old": "exit 0",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes"), []byte("not executable"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(etc, "rc2.d"), 0o755))
	require.NoError(t, os.Symlink("../init.d/web", filepath.Join(etc, "rc2.d", "S01web")))

	c := New(roles.New(nil), Options{InitDir: dir, InitScripts: true})
	got, err := c.Services(t.Context())
	require.NoError(t, err)
	require.Equal(t, []proto.Service{
		{Name: "broken", State: SysVUnknown, StartMode: "disabled"},
		{Name: "db", State: SysVStopped, StartMode: "disabled"},
		{Name: "hangs", State: SysVUnknown, StartMode: "disabled"},
		{Name: "web", State: SysVRunning, StartMode: "enabled", Description: "the web server"},
	}, got)

	_, err = New(roles.New(nil), Options{InitDir: t.TempDir(), InitScripts: true}).Services(t.Context())
	require.ErrorIs(t, err, roles.ErrUnsupported, "no scripts where they are the services: nothing to manage")
}
