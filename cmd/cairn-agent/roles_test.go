package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
	agentruntime "github.com/cairn-rmm/cairn/agent/runtime"
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
		"system:remote_shell", "system:vnc"} {
		require.Contains(t, got, key)
		require.Equal(t, roles.DesiredRunning, got[key].Desired)
		require.False(t, got[key].LastCheckedAt.IsZero(), key)
	}
	require.Equal(t, proto.RoleUnhealthy, got["system:vnc"].Observed)
	require.Equal(t, remoteDesktopMissing, got["system:vnc"].LastError)
	require.NotContains(t, got, "system:rdp", "agent/rdp reports its own role as it runs")
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

// Stopping a role ends what it still runs (issue 27 item 4: an open
// remote shell must not outlive the stop): onStop runs with the role
// before the answer, and only for a stop.
func TestStoppingARoleEndsItsWork(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), agent.FileName)
	require.NoError(t, agent.Create(path, "install", agent.Default()))
	handlers := agentruntime.NewHandlers()
	tracker := roles.New(time.Now)
	var ended []string
	require.NoError(t, registerRoleControl(handlers, tracker, agentruntime.FileStore{Path: path, Writer: "run"}, nil,
		func(_ context.Context, role string) { ended = append(ended, role) }))
	h := handlers.Lookup(proto.EventRoleDesiredState)
	require.NotNil(t, h)
	for _, desired := range []string{roles.DesiredStopped, roles.DesiredRunning} {
		payload, err := json.Marshal(proto.RoleDesiredStateRequest{Role: roles.RemoteShell, Desired: desired})
		require.NoError(t, err)
		res, err := h(t.Context(), nil, payload)
		require.NoError(t, err)
		require.Equal(t, desired, res.(proto.RoleDesiredStateResult).Desired)
	}
	require.Equal(t, []string{roles.RemoteShell}, ended)
}
