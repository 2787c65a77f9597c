package patches

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// The seed's parser tests (moved from agent/inventory), with the origin
// and security flag the parsers now add.

func withOrigin(p proto.PatchEntry, origin string, security bool) proto.PatchEntry {
	p.Origin, p.Security = origin, security
	return p
}

func TestParseAptSimulate(t *testing.T) {
	t.Parallel()
	got := ParseAptSimulate(fixture(t, "apt-simulate.txt"))
	require.Equal(t, []proto.PatchEntry{
		withOrigin(pendingPatch("apt", "base-files", "12.4+deb12u11", "12.4+deb12u15"), "Debian:12.15/oldstable", false),
		withOrigin(pendingPatch("apt", "bash", "5.2.15-2+b8", "5.2.15-2+b13"), "Debian:12.15/oldstable", false),
		withOrigin(pendingPatch("apt", "libc6:i386", "2.36-9+deb12u8", "2.36-9+deb12u9"), "Debian:12.9/stable", false),
		withOrigin(pendingPatch("apt", "libgcrypt20-dev", "1.10.1-3", "1.10.1-3+deb12u1"), "Debian:12.15/oldstable, Debian-Security:12/oldstable-security", true),
		withOrigin(pendingPatch("apt", "linux-image-amd64", "6.1.124-1", "6.1.128-1"), "Debian-Security:12/stable-security", true),
	}, got, "new installs, removals, Conf and malformed lines are not upgrades")
	require.Equal(t, proto.PatchEntry{Title: "bash 5.2.15-2+b13", State: "pending", Source: "apt", Package: "bash",
		InstalledVersion: "5.2.15-2+b8", CandidateVersion: "5.2.15-2+b13", Origin: "Debian:12.15/oldstable"}, got[1])
	require.Empty(t, ParseAptSimulate("Reading package lists...\n0 upgraded, 0 newly installed\n"))
}

func TestParseCheckUpdate(t *testing.T) {
	t.Parallel()
	installed := map[string]string{
		"bash.x86_64": "5.1.8-9.el9", "bash": "5.1.8-9.el9",
		"kernel": "5.14.0-427.el9", "grub2-tools.x86_64": "1:2.06-80.el9",
		"glibc.x86_64": "2.34-100.el9_4.2", "glibc.i686": "2.34-100.el9_4.2",
	}
	got := ParseCheckUpdate(fixture(t, "dnf-check-update.txt"), "dnf", installed)
	require.Equal(t, []proto.PatchEntry{
		withOrigin(pendingPatch("dnf", "bash", "5.1.8-9.el9", "5.1.8-9.el9_4"), "baseos", false),
		withOrigin(pendingPatch("dnf", "glibc", "2.34-100.el9_4.2", "2.34-100.el9_4.4"), "baseos", false),
		withOrigin(pendingPatch("dnf", "grub2-tools", "1:2.06-80.el9", "1:2.06-82.el9"), "baseos", false),
		withOrigin(pendingPatch("dnf", "kernel", "5.14.0-427.el9", "5.14.0-503.15.1.el9_5"), "baseos", false),
		withOrigin(pendingPatch("dnf", "kernel", "5.14.0-427.el9", "5.14.0-503.16.1.el9_5"), "baseos", false),
		withOrigin(pendingPatch("dnf", "python3-some-really-long-package-name-here", "", "3.9.18-3.el9_4.6"), "appstream", false),
	}, got, "wrapped names are joined, both glibc arches are one patch, the obsoletes section and junk are ignored")
	require.Empty(t, ParseCheckUpdate("", "yum", nil))
}
