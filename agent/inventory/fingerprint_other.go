//go:build !linux && !windows

package inventory

import (
	"fmt"
	"runtime"
)

// Fingerprint has no machine identifier to read on this platform yet.
func Fingerprint() (string, error) {
	return "", fmt.Errorf("fingerprint: not supported on %s yet", runtime.GOOS)
}
