package inventory

import (
	"fmt"
	"strings"

	"golang.org/x/sys/windows/registry"
)

// Fingerprint is the device fingerprint: hex SHA-256 over a versioned
// prefix and the MachineGuid Windows generates at installation. The
// 64-bit registry view is read so a 32-bit build sees the same value.
func Fingerprint() (string, error) {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, `SOFTWARE\Microsoft\Cryptography`,
		registry.QUERY_VALUE|registry.WOW64_64KEY)
	if err != nil {
		return "", fmt.Errorf("fingerprint: open Cryptography key: %w", err)
	}
	defer k.Close()
	guid, _, err := k.GetStringValue("MachineGuid")
	if err != nil {
		return "", fmt.Errorf("fingerprint: read MachineGuid: %w", err)
	}
	return fingerprintOf([][2]string{{"machine-guid", strings.ToLower(strings.TrimSpace(guid))}})
}
