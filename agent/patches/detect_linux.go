//go:build linux

package patches

import "os"

// Detect picks the system's provider: apt over $CAIRN_AGENT_APT_ROOT
// when it is set, apt on dpkg systems, dnf where it is installed, else
// nil (no provider: yum and zypper are read by the inventory's plain
// pending listing).
func Detect() Provider {
	if root := AptRoot(); root != "" {
		return AptAt(root)
	}
	if _, err := os.Stat("/var/lib/dpkg/status"); err == nil && hasTool("apt-get") {
		return &Apt{}
	}
	if hasTool("dnf") {
		return &Dnf{}
	}
	return nil
}

// DetectInstaller picks the installer of the system's package manager:
// apt over $CAIRN_AGENT_APT_ROOT when it is set, apt on dpkg systems, else
// dnf, else nil (no installs on this machine).
func DetectInstaller() Installer {
	if root := AptRoot(); root != "" {
		return AptInstallerAt(root)
	}
	if _, err := os.Stat("/var/lib/dpkg/status"); err == nil && hasTool("apt-get") {
		return &AptInstaller{}
	}
	if hasTool("dnf") {
		return &DnfInstaller{}
	}
	return nil
}
