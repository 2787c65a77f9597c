//go:build !windows

package service

import (
	"context"
	"errors"
	"io"
)

// RunUnderSCM: only Windows has a service control manager to attach to;
// systemd runs the agent as a plain process.
func RunUnderSCM(context.Context, string, func(context.Context, io.Writer) error) error {
	return errors.New(ServiceFlag + " is for the Windows service control manager")
}
