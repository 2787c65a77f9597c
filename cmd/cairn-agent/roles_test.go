package main

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// Every role of issue 27 item 4 is published from the start, the ones
// this build lacks as Unhealthy with the reason.
func TestPublishRoles(t *testing.T) {
	t.Parallel()
	tracker := roles.New(time.Now)
	publishRoles(tracker, false)
	got := map[string]proto.RoleHealth{}
	for _, r := range tracker.Snapshot() {
		got[r.Key] = r
	}
	for _, key := range []string{"system:system_context", "system:file_management", "system:registry_management",
		"system:remote_shell", "system:vnc", "system:rdp"} {
		require.Contains(t, got, key)
		require.Equal(t, roles.DesiredRunning, got[key].Desired)
		require.False(t, got[key].LastCheckedAt.IsZero(), key)
	}
	for _, key := range []string{"system:vnc", "system:rdp"} {
		require.Equal(t, proto.RoleUnhealthy, got[key].Observed)
		require.Equal(t, remoteDesktopMissing, got[key].LastError)
	}
	require.Equal(t, proto.RoleUnhealthy, got["system:registry_management"].Observed)
	require.Equal(t, "there is no registry on "+runtime.GOOS, got["system:registry_management"].LastError)
	require.Equal(t, proto.RoleHealthy, got["system:file_management"].Observed)
	// This machine has PTYs: a shell starts.
	require.Equal(t, proto.RoleHealthy, got["system:remote_shell"].Observed, got["system:remote_shell"].LastError)
	if os.Geteuid() == 0 {
		require.Equal(t, proto.RoleHealthy, got["system:system_context"].Observed)
	} else {
		require.Equal(t, proto.RoleUnhealthy, got["system:system_context"].Observed)
		require.Contains(t, got["system:system_context"].LastError, "not root")
	}
}
