//go:build !windows

package registry

// System is the machine's registry: none outside Windows, so the handler
// answers unsupported_platform.
func System() Store { return nil }
