//go:build windows

package agentupdates

import (
	"os"
	"os/exec"
)

// Exec starts exe with this process's arguments and returns; the caller
// then exits. (Windows has no exec; under the service manager exiting for
// a restart is enough, and the recovery actions start the new binary.)
func Exec(exe string) error {
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Start()
}
