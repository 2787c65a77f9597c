package inventory

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

func TestParseDpkg(t *testing.T) {
	t.Parallel()
	got := parseDpkg(fixture(t, "dpkg.txt"))
	require.Equal(t, []proto.Software{
		{Name: "adduser", Version: "3.134", Arch: "all", Source: "dpkg", Publisher: "Debian Adduser Developers", SizeBytes: 686 * 1024},
		{Name: "bash", Version: "5.2.15-2+b8", Arch: "amd64", Source: "dpkg", Publisher: "Matthias Klose", SizeBytes: 7164 * 1024},
		{Name: "held-pkg", Version: "4.1-2", Arch: "all", Source: "dpkg", Publisher: "Nobody"},
		{Name: "libc6", Version: "2.36-9+deb12u9", Arch: "amd64", Source: "dpkg", Publisher: "GNU Libc Maintainers", SizeBytes: 12980 * 1024},
		{Name: "libc6", Version: "2.36-9+deb12u9", Arch: "i386", Source: "dpkg", Publisher: "GNU Libc Maintainers", SizeBytes: 12912 * 1024},
	}, got, "removed (rc), half-installed (iU) and malformed lines are skipped; rows sorted by name and arch")
	require.Empty(t, parseDpkg(""))
}

func TestParseRPM(t *testing.T) {
	t.Parallel()
	at := func(sec int64) *time.Time { x := time.Unix(sec, 0).UTC(); return &x }
	got := parseRPM(fixture(t, "rpm.txt"))
	require.Equal(t, []proto.Software{
		{Name: "bash", Version: "5.1.8-9.el9", Arch: "x86_64", Source: "rpm", Publisher: "Rocky Enterprise Software Foundation",
			InstalledAt: at(1718000000), SizeBytes: 8015329},
		{Name: "grub2-tools", Version: "1:2.06-80.el9", Arch: "x86_64", Source: "rpm", Publisher: "Rocky Enterprise Software Foundation",
			InstalledAt: at(1718000100), SizeBytes: 10000},
		{Name: "tzdata", Version: "2024a-1.el9", Arch: "noarch", Source: "rpm"},
	}, got, "gpg-pubkey and malformed lines are skipped; (none) becomes empty; bad numbers are left out")
}

func TestParseZypperUpdates(t *testing.T) {
	t.Parallel()
	require.Equal(t, []proto.PatchEntry{
		pendingPatch("zypper", "aaa_base", "84.87+git20180409-3.3.1", "84.87+git20180409-3.6.1"),
		pendingPatch("zypper", "bash", "4.4-19.6.1", "4.4-19.9.1"),
	}, parseZypperUpdates(fixture(t, "zypper-list-updates.txt")))
	require.Empty(t, parseZypperUpdates("No updates found.\n"))
	require.Empty(t, parseZypperUpdates("v | repo | bash | 1.0 | 1.1 | x86_64\n"), "rows before a header are not trusted")
}

func TestParseOSRelease(t *testing.T) {
	t.Parallel()
	got := parseOSRelease(fixture(t, "os-release.txt"))
	require.Equal(t, map[string]string{
		"PRETTY_NAME": "Debian GNU/Linux 12 (bookworm)",
		"NAME":        "Debian GNU/Linux",
		"VERSION_ID":  "12",
		"VERSION":     "12 (bookworm)",
		"ID":          "debian",
		"ID_LIKE":     "rhel fedora",
		"VARIANT":     `Say "hi" $HOME \o/`,
		"HOME_URL":    "https://www.debian.org/",
	}, got)
}

func TestSystemctlServices(t *testing.T) {
	t.Parallel()
	units := parseSystemctlUnits(fixture(t, "systemctl-list-units.txt"))
	require.Equal(t, unit{Name: "nginx.service", Load: "loaded", Active: "failed", Sub: "failed",
		Description: "A high performance web server"}, units[3], "the failed marker is dropped")
	require.Len(t, units, 7, "sockets and garbage are skipped")

	files := parseSystemctlUnitFiles(fixture(t, "systemctl-list-unit-files.txt"))
	require.Equal(t, map[string]string{
		"cron.service": "enabled", "dbus.service": "static", "getty@.service": "enabled", "nginx.service": "enabled",
		"networking.service": "enabled", "ssh.service": "enabled", "rsync.service": "disabled", "apt-daily.service": "masked",
	}, files)

	got := mergeServices(units, files)
	require.Equal(t, []proto.Service{
		{Name: "apt-daily.service", State: "stopped", SubState: "dead", ActiveState: "inactive", StartMode: "masked"},
		{Name: "cron.service", State: "running", SubState: "running", LoadState: "loaded", ActiveState: "active",
			StartMode: "enabled", Description: "Regular background program processing daemon"},
		{Name: "dbus.service", State: "running", SubState: "running", LoadState: "loaded", ActiveState: "active",
			StartMode: "static", Description: "D-Bus System Message Bus"},
		{Name: "getty@tty1.service", State: "running", SubState: "running", LoadState: "loaded", ActiveState: "active",
			StartMode: "enabled", Description: "Getty on tty1"},
		{Name: "networking.service", State: "running", SubState: "exited", LoadState: "loaded", ActiveState: "active",
			StartMode: "enabled", Description: "Raise network interfaces"},
		{Name: "nginx.service", State: "failed", SubState: "failed", LoadState: "loaded", ActiveState: "failed",
			StartMode: "enabled", Description: "A high performance web server"},
		{Name: "rsync.service", State: "stopped", SubState: "dead", ActiveState: "inactive", StartMode: "disabled"},
		{Name: "ssh.service", State: "starting", SubState: "start", LoadState: "loaded", ActiveState: "activating",
			StartMode: "enabled", Description: "OpenBSD Secure Shell server"},
	}, got, "not-found inactive units and the template file are left out; unloaded files are stopped")
}

func TestServiceState(t *testing.T) {
	t.Parallel()
	for active, want := range map[string]string{
		"active": "running", "reloading": "running", "inactive": "stopped", "failed": "failed",
		"activating": "starting", "deactivating": "stopping", "maintenance": "maintenance",
	} {
		require.Equal(t, want, serviceState(active), active)
	}
}

func TestParseLoginctl(t *testing.T) {
	t.Parallel()
	cet := time.FixedZone("CET", 3600)
	got := parseLoginctlSession(fixture(t, "loginctl-show-session.txt"), cet)
	login := time.Date(2026, 1, 19, 13, 51, 57, 0, time.UTC)
	require.Equal(t, loginSession{Class: "user", Session: proto.Session{Username: "alice", TTY: "pts/0", Remote: "192.0.2.10",
		Type: "ssh", LoginAt: &login, SessionID: "3", Active: true}}, got, "a remote tty session is ssh")

	graphical := parseLoginctlSession("Id=c1\nName=bob\nTTY=\nSeat=seat0\nType=wayland\nClass=user\nActive=no\nTimestamp=garbage\n", cet)
	require.Equal(t, proto.Session{Username: "bob", TTY: "seat0", Type: "wayland", SessionID: "c1"}, graphical.Session,
		"a seat stands in for the tty; an unreadable timestamp is left out")

	list := "      3 1000 alice -     pts/0\n     c1 1001 bob   seat0 tty2 active no -\nNo sessions.\n\n"
	require.Equal(t, []string{"3", "c1"}, parseLoginctlList(list))
}
