//go:build windows

package main

import (
	"errors"

	"golang.org/x/sys/windows"
)

// systemContext is the system_context role's check: the agent runs
// elevated (as LocalSystem under the service manager).
func systemContext() error {
	if !windows.GetCurrentProcessToken().IsElevated() {
		return errors.New("the agent does not run elevated: installs, services and the registry are out of its reach")
	}
	return nil
}
