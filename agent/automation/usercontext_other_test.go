//go:build !windows

package automation

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
)

func testRunner(t *testing.T) *runner {
	t.Helper()
	r, err := newRunner(Options{Config: func() (*agent.Config, error) { return agent.Default(), nil }, TempDir: t.TempDir(),
		UserSession: NewUserSession()})
	require.NoError(t, err)
	return r
}

func requireCode(t *testing.T, want string, err error) *proto.Error {
	t.Helper()
	var pe *proto.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, want, pe.Code, pe.Message)
	return pe
}

// SPEC agent behaviour 12: Linux reports user context unsupported, with
// a code, and runs nothing; it advertises no helper context.
func TestUserContextIsRefusedOffWindows(t *testing.T) {
	t.Parallel()
	r := testRunner(t)
	marker := filepath.Join(t.TempDir(), "ran")
	_, err := r.Run(t.Context(), nil, proto.ScriptJob{RunID: "run-1", Language: "sh", Body: "touch " + marker,
		TimeoutSeconds: 5, RunAs: proto.RunAsCurrentUser})
	pe := requireCode(t, proto.CodeUserContextUnsupported, err)
	require.Contains(t, pe.Message, "user-context jobs are not supported on linux")
	require.NoFileExists(t, marker)
	require.Empty(t, HelperContexts())
	require.NotNil(t, HelperContexts(), "advertised as [], not null")

	// system (or nothing) runs as before; anything else is refused.
	for _, runAs := range []string{"", proto.RunAsSystem} {
		res, err := r.Run(t.Context(), nil, proto.ScriptJob{RunID: "run-1", Language: "sh", Body: "echo ok", TimeoutSeconds: 5, RunAs: runAs})
		require.NoError(t, err)
		require.Equal(t, "ok\n", res.Stdout)
	}
	_, err = r.Run(t.Context(), nil, proto.ScriptJob{RunID: "run-1", Language: "sh", Body: "touch " + marker, TimeoutSeconds: 5, RunAs: "root"})
	requireCode(t, proto.CodeOpInvalid, err)
	require.NoFileExists(t, marker)
}

// A headless host reports the user's session, a desktop-only surface, as
// "No Desktop Environment Active"; one with a display server listening
// does not.
func TestHeadlessHostReportsNoDesktopEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	x11 := filepath.Join(dir, "X11-unix")
	require.NoError(t, os.Mkdir(x11, 0o755))
	patterns := []string{filepath.Join(x11, "X*"), filepath.Join(dir, "run-user", "*", "wayland-*")}

	// Not a socket: a stale file is no display.
	require.NoError(t, os.WriteFile(filepath.Join(x11, "X0"), nil, 0o600))
	require.False(t, desktopActive(patterns))
	pe := requireCode(t, proto.CodeUserContextUnsupported, refusal(false))
	require.Equal(t, "No Desktop Environment Active: user-context jobs are not supported on linux: the agent runs scripts as root only", pe.Message)

	for _, path := range []string{filepath.Join(x11, "X1"), filepath.Join(dir, "run-user", "1000", "wayland-0")} {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		l, err := net.Listen("unix", path)
		require.NoError(t, err)
		require.True(t, desktopActive(patterns), path)
		require.NoError(t, l.Close())
		_ = os.Remove(path)
	}
	pe = requireCode(t, proto.CodeUserContextUnsupported, refusal(true))
	require.NotContains(t, pe.Message, proto.NoDesktopEnvironment)
}
