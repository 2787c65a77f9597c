package patches

import "context"

// RebootRequired says whether the machine waits for a reboot after
// updates: Debian's /var/run/reboot-required, else needs-restarting -r
// where dnf is. Under $CAIRN_AGENT_APT_ROOT the flag is the root's.
func RebootRequired(ctx context.Context) (bool, error) {
	if root := AptRoot(); root != "" {
		need, _ := RebootRequiredFile(AptPaths(root).RebootFile)
		return need, nil
	}
	if need, _ := RebootRequiredFile("/var/run/reboot-required"); need {
		return true, nil
	}
	if hasTool("dnf") || hasTool("needs-restarting") {
		return dnfNeedsReboot(ctx)
	}
	return false, nil
}
