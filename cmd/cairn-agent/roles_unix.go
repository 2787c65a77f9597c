//go:build !windows

package main

import (
	"fmt"
	"os"
)

// systemContext is the system_context role's check: the agent is the
// privileged process operations need (root).
func systemContext() error {
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Errorf("the agent runs as uid %d, not root: installs, services and other users' files are out of its reach", uid)
	}
	return nil
}
