//go:build linux

package patches

import "os"

// Detect picks the system's provider: apt on dpkg systems, dnf where it
// is installed, else nil (no provider: yum and zypper are read by the
// inventory's plain pending listing).
func Detect() Provider {
	if _, err := os.Stat("/var/lib/dpkg/status"); err == nil && hasTool("apt-get") {
		return &Apt{}
	}
	if hasTool("dnf") {
		return &Dnf{}
	}
	return nil
}
