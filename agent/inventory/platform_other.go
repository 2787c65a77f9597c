//go:build !linux && !windows

package inventory

// systemdBooted: systemd is Linux's.
func systemdBooted() bool { return false }

// platformParts: this platform has no collectors yet, so every role says
// so instead of sending empty collections that would look like data.
func platformParts() []part { return unsupportedParts() }
