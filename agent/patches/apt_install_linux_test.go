//go:build linux

package patches

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/patches/apttest"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// aptRoot is apttest's private root with the agent's provider and
// installer over it.
type aptRoot struct{ *apttest.Root }

func newAptRoot(t *testing.T) *aptRoot { return &aptRoot{apttest.New(t)} }

func (r *aptRoot) provider() *Apt {
	return &Apt{Extra: r.Opts, HistoryDir: r.Path("var/log/apt"), RebootFile: r.Path("run/reboot-required")}
}

func (r *aptRoot) installer() *AptInstaller {
	return &AptInstaller{Extra: r.Opts, AdminDir: r.Path("var/lib/dpkg"), RebootFile: r.Path("run/reboot-required")}
}

func hello(rows []proto.PatchEntry) []proto.PatchEntry {
	var out []proto.PatchEntry
	for _, r := range rows {
		if r.Package == "cairn-hello" {
			out = append(out, r)
		}
	}
	return out
}

// TestAptInstallForRealInAPrivateRoot upgrades a package with the real
// apt-get and dpkg against a local repository the test builds, then
// re-scans: the pending row is gone and the history row that replaces it
// has its key; a reboot flag is seen; asking again is already_installed.
func TestAptInstallForRealInAPrivateRoot(t *testing.T) {
	t.Parallel()
	r := newAptRoot(t)

	before, err := r.provider().Scan(t.Context())
	require.NoError(t, err)
	pending := hello(before.Pending)
	require.Len(t, pending, 1)
	require.Equal(t, "1.0", pending[0].InstalledVersion)
	require.Equal(t, "1.1", pending[0].CandidateVersion)
	require.Empty(t, hello(before.History))
	require.False(t, before.Status.RebootRequired)

	var got []Progress
	res, err := r.installer().Install(t.Context(), proto.PatchInstallRequest{InstallID: "i1", Package: "cairn-hello", Version: "1.1"},
		func(p Progress) { got = append(got, p) })
	require.NoError(t, err)
	require.Equal(t, proto.PatchInstallDone, res.Status, "%s\n%s", res.Message, res.LogExcerpt)
	require.Equal(t, "cairn-hello 1.0 -> 1.1", res.Message)
	phases := map[string]bool{}
	for _, p := range got {
		phases[p.Phase] = true
	}
	require.Equal(t, map[string]bool{"starting": true, "downloading": true, "installing": true, "finished": true}, phases,
		"progress from APT::Status-Fd")
	b, err := os.ReadFile(r.Path("usr/share/cairn-hello/version"))
	require.NoError(t, err)
	require.Equal(t, "1.1\n", string(b), "dpkg unpacked the new version inside the private root")

	// The re-scan: no longer pending, in the history under the same key.
	require.NoError(t, os.WriteFile(r.Path("run/reboot-required"), []byte("*** System restart required ***\n"), 0o644))
	require.NoError(t, os.WriteFile(r.Path("run/reboot-required.pkgs"), []byte("cairn-hello\n"), 0o644))
	after, err := r.provider().Scan(t.Context())
	require.NoError(t, err)
	require.Empty(t, hello(after.Pending))
	hist := hello(after.History)
	require.Len(t, hist, 1)
	require.Equal(t, "1.1", hist[0].InstalledVersion)
	require.Equal(t, proto.PatchSourceAptHistory, hist[0].Source)
	require.Equal(t, rowKey(pending[0]), rowKey(hist[0]), "the history row has the pending row's key")
	require.True(t, after.Status.RebootRequired)
	require.Equal(t, []string{"cairn-hello"}, after.Status.RebootPackages)

	again, err := r.installer().Install(t.Context(), proto.PatchInstallRequest{InstallID: "i2", Package: "cairn-hello", Version: "1.1"},
		func(Progress) {})
	require.NoError(t, err)
	require.Equal(t, proto.PatchInstallAlready, again.Status)
	require.True(t, again.AlreadyInstalled)
}
