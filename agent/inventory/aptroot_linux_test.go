//go:build linux

package inventory

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/patches"
	"github.com/cairn-rmm/cairn/agent/patches/apttest"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// TestInventoryReadsTheAptRoot: with CAIRN_AGENT_APT_ROOT set, the
// inventory's software and patch rows are the private root's, not the
// host's: cairn-hello 1.0 installed, 1.1 pending (t.Setenv: not
// parallel).
func TestInventoryReadsTheAptRoot(t *testing.T) {
	r := apttest.New(t)
	t.Setenv(patches.AptRootEnv, r.Root)
	c := New(roles.New(nil), Options{})

	var inv proto.Inventory
	require.NoError(t, collectSoftware(t.Context(), c, &inv))
	require.Len(t, inv.Software, 1, "only the root's packages: %v", inv.Software)
	require.Equal(t, apttest.Package, inv.Software[0].Name)
	require.Equal(t, "1.0", inv.Software[0].Version)

	require.NoError(t, collectPatches(t.Context(), c, &inv))
	require.NotNil(t, inv.PatchStatus)
	require.Equal(t, proto.PatchProviderApt, inv.PatchStatus.Provider)
	require.Len(t, inv.Patches, 1, "only the root's pending upgrade: %v", inv.Patches)
	require.Equal(t, apttest.Package, inv.Patches[0].Package)
	require.Equal(t, proto.PatchPending, inv.Patches[0].State)
	require.Equal(t, "1.1", inv.Patches[0].CandidateVersion)
}
