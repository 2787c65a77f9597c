//go:build !linux && !windows

package service

import "context"

// InstallResult says what Install did; nothing on this platform.
type InstallResult struct{}

// UninstallResult says what Uninstall did; nothing on this platform.
type UninstallResult struct{}

// Install is not available on this platform yet: Windows needs a service
// control manager registration, not a systemd unit.
func Install(context.Context, InstallOptions) (InstallResult, error) {
	return InstallResult{}, ErrNotSupported
}

// Uninstall is not available on this platform yet.
func Uninstall(context.Context, UninstallOptions) (UninstallResult, error) {
	return UninstallResult{}, ErrNotSupported
}
