//go:build linux

package patches

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// TestAptScanOnThisMachine runs the apt provider for real: apt-get -s
// against the package lists already on disk (no network, no lock), the
// history in /var/log/apt and the reboot flag. It compares with what
// apt-get and the history log say when asked directly.
func TestAptScanOnThisMachine(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/var/lib/dpkg/status"); err != nil {
		t.Fatalf("this test needs a dpkg system (the project's machines are Debian): %v", err)
	}
	scan, err := (&Apt{}).Scan(t.Context())
	require.NoError(t, err)
	require.Equal(t, proto.PatchProviderApt, scan.Status.Provider)
	require.NotNil(t, scan.Pending)
	require.NotNil(t, scan.History)

	out, err := exec.Command("apt-get", "-s", "-o", "Debug::NoLocking=1", "dist-upgrade").Output()
	require.NoError(t, err)
	want := 0
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "Inst ") && strings.Contains(line, "] (") {
			want++
		}
	}
	require.LessOrEqual(t, len(scan.Pending), want)
	require.Equal(t, want > 0, len(scan.Pending) > 0)
	for _, r := range scan.Pending {
		require.NotEmpty(t, r.Package)
		require.NotEmpty(t, r.CandidateVersion)
		require.Equal(t, strings.Contains(strings.ToLower(r.Origin), "security"), r.Security, r.Package)
	}

	hist, _ := os.ReadFile("/var/log/apt/history.log")
	require.Equal(t, strings.Contains(string(hist), "\nUpgrade: "), len(scan.History) > 0,
		"history rows exactly when the log records upgrades")
	for _, r := range scan.History {
		require.Equal(t, proto.PatchInstalled, r.State)
		require.NotContains(t, r.Package, ":amd64")
	}
	_, err = os.Stat("/var/run/reboot-required")
	require.Equal(t, err == nil, scan.Status.RebootRequired)
}
