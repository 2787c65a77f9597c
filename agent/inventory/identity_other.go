//go:build !windows

package inventory

import "runtime"

// OSName: the commands read os-release themselves on Unix; this is only
// the Windows name source.
func OSName() string { return runtime.GOOS }

// BootID: see OSName.
func BootID() string { return "" }
