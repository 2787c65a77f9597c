package inventory

import (
	"context"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// OSName is the OS name the os part reports ("Windows 11 Pro 23H2"), for
// enrollment and status, which the Engine shows before any inventory
// arrives; "windows" when it cannot be read.
func OSName() string {
	var inv proto.Inventory
	if err := collectOS(context.Background(), nil, &inv); err != nil || inv.OS == nil {
		return "windows"
	}
	return inv.OS.Name
}

// BootID is Windows' boot counter ("" where missing).
func BootID() string { return bootID() }
