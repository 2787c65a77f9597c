package patches

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/testdir"
)

func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

func TestParseAptSimulateMarksSecurityArchives(t *testing.T) {
	t.Parallel()
	got := ParseAptSimulate(fixture(t, "apt-simulate-security.txt"))
	byPkg := map[string]proto.PatchEntry{}
	for _, r := range got {
		byPkg[r.Package] = r
	}
	require.Len(t, got, 5, "Inst lines only; Conf lines are not rows")
	cases := []struct {
		pkg, installed, candidate, origin string
		security                          bool
	}{
		{"bash", "5.2.15-2+b8", "5.2.15-2+b13", "Debian:12.15/oldstable", false},
		{"libgcrypt20", "1.10.1-3", "1.10.1-3+deb12u1", "Debian:12.15/oldstable, Debian-Security:12/oldstable-security", true},
		{"liblzma5", "5.4.1-1", "5.4.1-1+deb12u2", "Debian-Security:12/oldstable-security", true},
		{"libcap2", "1:2.66-4+deb12u2+b2", "1:2.66-4+deb12u3+b1", "Debian:12.15/oldstable", false},
	}
	for _, c := range cases {
		r, ok := byPkg[c.pkg]
		require.True(t, ok, c.pkg)
		require.Equal(t, c.installed, r.InstalledVersion, c.pkg)
		require.Equal(t, c.candidate, r.CandidateVersion, c.pkg)
		require.Equal(t, c.origin, r.Origin, c.pkg)
		require.Equal(t, c.security, r.Security, c.pkg)
		require.Equal(t, proto.PatchPending, r.State)
		require.Equal(t, proto.PatchProviderApt, r.Source)
	}
	// The seed's fixture (no security lines) still parses the same rows.
	require.Len(t, ParseAptSimulate(fixture(t, "apt-simulate.txt")), 5)
}

func TestParseAptHistoryReadsUpgrades(t *testing.T) {
	t.Parallel()
	rows := ParseAptHistory(strings.NewReader(fixture(t, "apt-history.log")), "amd64", time.UTC)
	var got []string
	for _, r := range rows {
		require.Equal(t, proto.PatchInstalled, r.State)
		require.Equal(t, proto.PatchSourceAptHistory, r.Source)
		require.NotNil(t, r.InstalledAt, r.Package)
		got = append(got, r.Package+"="+r.InstalledVersion+"@"+r.InstalledAt.Format(time.DateTime))
	}
	require.Equal(t, []string{
		"libsystemd0=252.38-1~deb12u1@2025-06-24 14:36:25",
		"libudev1=252.38-1~deb12u1@2025-06-24 14:36:25",
		"tzdata=2025b-0+deb12u2@2026-05-09 07:28:46",
		"tzdata=2025b-0+deb12u3@2026-05-10 09:00:00",
		"libfoo=1.1@2026-05-10 09:00:00",
	}, got, "Upgrade: lines only (Install: of new packages is no update), native and :all arch left off")
}

func TestAptHistoryReadsRotatedLogs(t *testing.T) {
	t.Parallel()
	dir := testdir.New(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "history.log"), []byte(fixture(t, "apt-history.log")), 0o600))
	a := &Apt{HistoryDir: dir, Location: time.UTC}
	rows, err := a.history("amd64")
	require.NoError(t, err)
	require.Len(t, rows, 5)
	require.Equal(t, "libfoo", rows[len(rows)-1].Package, "newest last")
}

func TestRebootRequiredFile(t *testing.T) {
	t.Parallel()
	dir := testdir.New(t)
	flag := filepath.Join(dir, "reboot-required")
	got, pkgs := RebootRequiredFile(flag)
	require.False(t, got)
	require.Empty(t, pkgs)
	require.NoError(t, os.WriteFile(flag, []byte("*** System restart required ***\n"), 0o600))
	got, _ = RebootRequiredFile(flag)
	require.True(t, got)
	require.NoError(t, os.WriteFile(flag+".pkgs", []byte("linux-image-6.1.0-28-amd64\nlibc6\nlibc6\n"), 0o600))
	got, pkgs = RebootRequiredFile(flag)
	require.True(t, got)
	require.Equal(t, []string{"linux-image-6.1.0-28-amd64", "libc6"}, pkgs)
}

func TestDnfCheckUpdateWithAdvisories(t *testing.T) {
	t.Parallel()
	rows := ParseCheckUpdate(fixture(t, "dnf-check-update.txt"), proto.PatchProviderDnf,
		map[string]string{"bash.x86_64": "5.1.8-9.el9", "kernel": "5.14.0-427.el9"})
	ApplyUpdateInfo(rows, ParseUpdateInfo(fixture(t, "dnf-updateinfo.txt")))
	type row struct {
		pkg, cand, inst, origin, severity string
		security                          bool
	}
	var got []row
	for _, r := range rows {
		got = append(got, row{r.Package, r.CandidateVersion, r.InstalledVersion, r.Origin, r.Severity, r.Security})
	}
	require.Equal(t, []row{
		{"bash", "5.1.8-9.el9_4", "5.1.8-9.el9", "RHBA-2024:5312", "", false},
		{"glibc", "2.34-100.el9_4.4", "", "RHEA-2024:1111", "", false},
		{"grub2-tools", "1:2.06-82.el9", "", "RHSA-2024:5101", "Moderate", true},
		{"kernel", "5.14.0-503.15.1.el9_5", "5.14.0-427.el9", "baseos", "", false},
		{"kernel", "5.14.0-503.16.1.el9_5", "5.14.0-427.el9", "RHSA-2024:9315", "Important", true},
		{"python3-some-really-long-package-name-here", "3.9.18-3.el9_4.6", "", "appstream", "", false},
	}, got)
}

func TestParseDnfRPMLog(t *testing.T) {
	t.Parallel()
	rows := newestHistory(ParseDnfRPMLog(strings.NewReader(fixture(t, "dnf.rpm.log"))), HistoryLimit)
	var got []string
	for _, r := range rows {
		require.Equal(t, proto.PatchSourceDnfHistory, r.Source)
		got = append(got, r.Package+"="+r.InstalledVersion+"@"+r.InstalledAt.Format(time.RFC3339))
	}
	require.Equal(t, []string{
		"bash=5.1.8-9.el9@2024-02-03T08:01:10Z",
		"openssl-libs=1:3.0.7-24.el9@2024-02-03T08:01:12Z",
	}, got, "Upgrade: lines only; a reinstall of one version is one row, dated by the newest")
}

// recordedWUA replays a recorded reading of the Windows Update Agent.
type recordedWUA struct {
	Pending  []WUAUpdate       `json:"pending"`
	Hist     []WUAHistoryEntry `json:"history"`
	QFE      []QuickFix        `json:"qfe"`
	Reboot   bool              `json:"reboot_required"`
	criteria []string
}

func (r *recordedWUA) Search(_ context.Context, c string) ([]WUAUpdate, error) {
	r.criteria = append(r.criteria, c)
	return r.Pending, nil
}
func (r *recordedWUA) History(context.Context) ([]WUAHistoryEntry, error) { return r.Hist, nil }
func (r *recordedWUA) QuickFixes(context.Context) ([]QuickFix, error)     { return r.QFE, nil }
func (r *recordedWUA) RebootRequired(context.Context) (bool, error)       { return r.Reboot, nil }

func TestWindowsProviderOverRecordedWUA(t *testing.T) {
	t.Parallel()
	var rec recordedWUA
	require.NoError(t, json.Unmarshal([]byte(fixture(t, "wua.json")), &rec))
	scan, err := (&Windows{WUA: &rec}).Scan(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"IsInstalled=0 and IsHidden=0"}, rec.criteria)
	require.True(t, scan.Status.RebootRequired)
	require.Equal(t, proto.PatchProviderWUA, scan.Status.Provider)

	byKey := map[string]proto.PatchEntry{}
	for _, r := range scan.Rows() {
		_, dup := byKey[rowKey(r)]
		require.False(t, dup, "one row per KB: %s", rowKey(r))
		byKey[rowKey(r)] = r
	}
	cu := byKey["kb:KB5034123"]
	require.Equal(t, proto.PatchPending, cu.State)
	require.Equal(t, proto.PatchSourceWUAPending, cu.Source)
	require.Equal(t, "6c5b1f2a-3e0d-4c8b-9f00-1a2b3c4d5e6f", cu.UpdateID)
	require.Equal(t, 201, cu.Revision)
	require.Equal(t, "Critical", cu.Severity)
	require.True(t, cu.Security)
	require.Equal(t, "always_requires_reboot", cu.RebootBehavior)
	require.Equal(t, int64(734003200), cu.SizeBytes)
	require.Equal(t, []string{"Security Updates", "Windows 11"}, cu.Categories)
	require.Equal(t, time.Date(2024, 1, 9, 0, 0, 0, 0, time.UTC), *cu.ReleasedAt)

	def := byKey["kb:KB2267602"]
	require.False(t, def.Security, "definition updates carry no MSRC severity")
	require.Equal(t, "never_reboots", def.RebootBehavior)

	drv := byKey["update:b2c3d4e5-0000-4000-8000-000000000002"]
	require.Equal(t, proto.PatchPending, drv.State, "an update without a KB is known by its ID")
	require.Equal(t, "can_request_reboot", drv.RebootBehavior)

	net := byKey["kb:KB5033920"]
	require.Equal(t, proto.PatchInstalled, net.State, "installed per the history outranks the stale pending search")
	require.Equal(t, proto.PatchSourceWUAHistory, net.Source)

	cu11 := byKey["kb:KB5032190"]
	require.Equal(t, proto.PatchInstalled, cu11.State)
	require.Equal(t, time.Date(2023, 11, 21, 10, 0, 0, 0, time.UTC), *cu11.InstalledAt,
		"the failed attempt of the day before is no install")

	qfe := byKey["kb:KB5027397"]
	require.Equal(t, proto.PatchSourceQFE, qfe.Source)
	require.Equal(t, time.Date(2023, 7, 12, 0, 0, 0, 0, time.UTC), *qfe.InstalledAt)

	_, uninstalled := byKey["kb:KB5000001"]
	require.False(t, uninstalled, "an uninstallation is not an installed row")
	require.Len(t, byKey, 6)
}
