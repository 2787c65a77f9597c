//go:build linux

package patches

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// TestAptRootOptionsAreTheTestRigs: the agent's private-root options are
// the ones apttest's rig proves keep apt and dpkg inside the root.
func TestAptRootOptionsAreTheTestRigs(t *testing.T) {
	t.Parallel()
	r := newAptRoot(t)
	require.Equal(t, r.Opts, AptRootOptions(r.Root.Root))
	require.Equal(t, r.provider(), AptAt(r.Root.Root))
	require.Equal(t, r.installer(), AptInstallerAt(r.Root.Root))
	require.Equal(t, &Apt{}, AptAt(""))
	require.Equal(t, &AptInstaller{}, AptInstallerAt(""))
}

// TestAptRootEnvPointsTheAgentAtAPrivateRoot: with CAIRN_AGENT_APT_ROOT
// set, the provider and installer the agent detects scan and upgrade the
// root's packages from its local repository, and the reboot flag read is
// the root's (t.Setenv: not parallel).
func TestAptRootEnvPointsTheAgentAtAPrivateRoot(t *testing.T) {
	r := newAptRoot(t)
	t.Setenv(AptRootEnv, r.Root.Root+"/")
	require.Equal(t, r.Root.Root, AptRoot())

	before, err := Detect().Scan(t.Context())
	require.NoError(t, err)
	pending := hello(before.Pending)
	require.Len(t, pending, 1, "the root's repository offers cairn-hello 1.1")
	require.Equal(t, "1.0", pending[0].InstalledVersion)

	res, err := DetectInstaller().Install(t.Context(), proto.PatchInstallRequest{InstallID: "e1", Package: "cairn-hello", Version: "1.1"},
		func(Progress) {})
	require.NoError(t, err)
	require.Equal(t, proto.PatchInstallDone, res.Status, "%s\n%s", res.Message, res.LogExcerpt)
	b, err := os.ReadFile(r.Path("usr/share/cairn-hello/version"))
	require.NoError(t, err)
	require.Equal(t, "1.1\n", string(b))

	after, err := Detect().Scan(t.Context())
	require.NoError(t, err)
	require.Empty(t, hello(after.Pending))
	require.Len(t, hello(after.History), 1, "the root's apt history records the upgrade")

	need, err := RebootRequired(t.Context())
	require.NoError(t, err)
	require.False(t, need)
	require.NoError(t, os.WriteFile(r.Path("run/reboot-required"), nil, 0o644))
	need, err = RebootRequired(t.Context())
	require.NoError(t, err)
	require.True(t, need, "the root's reboot flag")
}
