//go:build !linux && !windows

package patches

// Detect: no provider on this platform.
func Detect() Provider { return nil }
