//go:build !linux && !windows

package patches

import (
	"context"
	"errors"
)

// RebootRequired: no answer on this platform.
func RebootRequired(context.Context) (bool, error) {
	return false, errors.New("reboot detection is not supported on this platform")
}
