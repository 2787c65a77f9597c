package patches

import (
	"context"
	"errors"

	"golang.org/x/sys/windows/registry"
)

// rebootKeys exist while Windows waits for a reboot: Windows Update's
// flag and Component Based Servicing's.
var rebootKeys = []string{
	`SOFTWARE\Microsoft\Windows\CurrentVersion\WindowsUpdate\Auto Update\RebootRequired`,
	`SOFTWARE\Microsoft\Windows\CurrentVersion\Component Based Servicing\RebootPending`,
}

// RebootRequired says whether Windows waits for a reboot after updates.
func RebootRequired(context.Context) (bool, error) { return anyKeyExists(rebootKeys) }

// anyKeyExists says whether one of the HKLM keys exists.
func anyKeyExists(keys []string) (bool, error) {
	for _, path := range keys {
		k, err := registry.OpenKey(registry.LOCAL_MACHINE, path, registry.QUERY_VALUE)
		if errors.Is(err, registry.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, err
		}
		k.Close()
		return true, nil
	}
	return false, nil
}
