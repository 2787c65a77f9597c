//go:build !windows

package agentupdates

import (
	"os"
	"syscall"
)

// Exec replaces this process with exe (same arguments and environment):
// the restart into a new or restored build, which works with or without a
// service manager.
func Exec(exe string) error {
	return syscall.Exec(exe, append([]string{exe}, os.Args[1:]...), os.Environ())
}
