//go:build !linux && !windows

package inventory

import (
	"context"
	"errors"
)

// SignedInUsers cannot list sessions on this platform.
func SignedInUsers(context.Context) ([]string, error) {
	return nil, errors.New("sessions are not listed on this platform")
}
