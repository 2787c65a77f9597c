//go:build !linux && !windows

package patches

// Detect: no provider on this platform.
func Detect() Provider { return nil }

// DetectInstaller: no installs on this platform.
func DetectInstaller() Installer { return nil }
