package inventory

import "strings"

// Fingerprint is the device fingerprint the agent enrolls with and sends
// on token refresh: hex SHA-256 over a versioned prefix, /etc/machine-id
// (or the D-Bus copy of it) and the DMI product UUID where the firmware
// has one. The UUID tells apart virtual machines cloned from one image
// whose machine-id was never reset. It is readable by root only, which is
// fine: only the privileged agent enrolls and refreshes tokens, and a
// non-root call yields a different fingerprint.
func Fingerprint() (string, error) {
	machineID := readTrim(machineIDPath)
	if machineID == "" {
		machineID = readTrim("/var/lib/dbus/machine-id")
	}
	return fingerprintOf([][2]string{
		{"machine-id", machineID},
		{"product-uuid", strings.ToLower(readTrim(dmiDir + "/product_uuid"))},
	})
}
