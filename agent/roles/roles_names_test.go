package roles

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The wire package's list and this package's names are one list.
func TestNamesAreTheConstants(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{
		SystemContext, CurrentUser, DeviceAudit, FileManagement, PatchManagement,
		ProcessManagement, RegistryManagement, ServiceManagement, SoftwareManagement,
		VPNTunnel, RemoteShell, VNC, RDP,
	}, Names)
	require.Equal(t, []string{APIWebSocket}, Connection)
}
