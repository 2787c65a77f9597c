package patches_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/patches"
)

func TestInstallRequestIsOnePerOpenPatch(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.device(t, "web-1", "a")
	f.report(t, "web-1", nil, pending("openssl", "3.0.1", "3.0.2", true))
	req := patches.Request{DeviceGUID: "web-1", PatchKey: "pkg:openssl=3.0.2", Actor: "admin"}
	a, target, err := f.svc.RequestInstall(t.Context(), cairn.AllSites, req)
	require.NoError(t, err)
	require.Equal(t, patches.StateQueued, a.State)
	require.Equal(t, "site-a", target.SiteSlug)
	require.Equal(t, proto.PatchInstallRequest{InstallID: a.ID, PatchKey: "pkg:openssl=3.0.2", Title: "openssl 3.0.2",
		Package: "openssl", Version: "3.0.2"}, a.AgentRequest())
	b, _, err := f.svc.RequestInstall(t.Context(), cairn.AllSites, req)
	require.NoError(t, err)
	require.Equal(t, a.ID, b.ID, "asking twice while it is open is the same install")

	page, err := f.svc.Audit(t.Context(), cairn.AllSites, patches.AuditQuery{})
	require.NoError(t, err)
	require.Equal(t, &patches.ActiveInstall{InstallID: a.ID, State: patches.StateQueued}, page.Rows[0].ActiveInstallJob)

	_, _, err = f.svc.RequestInstall(t.Context(), cairn.SiteScope{SiteIDs: []int64{f.sites["b"]}}, req)
	require.True(t, cairn.IsCode(err, cairn.ECodeNotFound), "out of scope: %v", err)
	_, _, err = f.svc.RequestInstall(t.Context(), cairn.AllSites, patches.Request{DeviceGUID: "web-1", PatchKey: "pkg:nope=1", Actor: "admin"})
	require.True(t, cairn.IsCode(err, cairn.ECodeNotFound), "no such patch: %v", err)
	_, _, err = f.svc.RequestInstall(t.Context(), cairn.AllSites, patches.Request{DeviceGUID: "web-1", Actor: "admin"})
	require.True(t, cairn.IsCode(err, cairn.ECodeValidation), "%v", err)
}

func TestInstallProgressIsTheDevicesOwnAndInOrder(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.device(t, "web-1", "a")
	f.device(t, "web-2", "a")
	f.report(t, "web-1", nil, pending("openssl", "3.0.1", "3.0.2", true))
	inst, _, err := f.svc.RequestInstall(t.Context(), cairn.AllSites, patches.Request{DeviceGUID: "web-1", PatchKey: "pkg:openssl=3.0.2", Actor: "admin"})
	require.NoError(t, err)
	at := time.Now().Add(-time.Minute).UTC()
	p := proto.PatchInstallProgress{InstallID: inst.ID, Phase: "installing", Percent: 40, Message: "Unpacking openssl", CapturedAt: at}
	ok, err := f.svc.Progress(t.Context(), "web-1", p)
	require.NoError(t, err)
	require.False(t, ok, "a queued install takes no progress")

	_, run, err := f.svc.Begin(t.Context(), inst.ID)
	require.NoError(t, err)
	require.True(t, run)
	ok, err = f.svc.Progress(t.Context(), "web-1", p)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = f.svc.Progress(t.Context(), "web-2", p)
	require.NoError(t, err)
	require.False(t, ok, "another device's report is ignored")
	older := p
	older.Percent, older.CapturedAt = 10, at.Add(-time.Second)
	ok, err = f.svc.Progress(t.Context(), "web-1", older)
	require.NoError(t, err)
	require.False(t, ok, "an older report does not go back")
	got, err := f.svc.Get(t.Context(), inst.ID)
	require.NoError(t, err)
	require.Equal(t, int32(40), got.Percent)
	require.Equal(t, "installing", got.Phase)

	for _, bad := range []proto.PatchInstallProgress{{Phase: "installing", CapturedAt: at}, {InstallID: inst.ID, Phase: "dancing", CapturedAt: at},
		{InstallID: inst.ID, Phase: "installing", Percent: 101, CapturedAt: at}, {InstallID: inst.ID, Phase: "installing"}} {
		_, err := f.svc.Progress(t.Context(), "web-1", bad)
		require.True(t, cairn.IsCode(err, cairn.ECodeValidation), "%+v: %v", bad, err)
	}
}

// An attempt's outcome is decided against the re-scan stored after it:
// "installed" only when the scan shows it.
func TestConcludeTrustsTheRescanNotTheAgent(t *testing.T) {
	t.Parallel()
	exit0, exit100 := 0, 100
	for _, tc := range []struct {
		name   string
		rescan []proto.PatchEntry // nil: the re-scan failed
		out    patches.Outcome
		want   string
	}{
		{"installed and shown installed", []proto.PatchEntry{installed("openssl", "3.0.2")},
			patches.Outcome{Result: &proto.PatchInstallResult{Status: "installed", ExitCode: &exit0}}, patches.StateInstalled},
		{"installed and no longer pending", []proto.PatchEntry{},
			patches.Outcome{Result: &proto.PatchInstallResult{Status: "installed", ExitCode: &exit0}}, patches.StateInstalled},
		{"said installed, still pending", []proto.PatchEntry{pending("openssl", "3.0.1", "3.0.2", true)},
			patches.Outcome{Result: &proto.PatchInstallResult{Status: "installed", ExitCode: &exit0}}, patches.StateNotConfirmed},
		{"said installed, a newer candidate pending", []proto.PatchEntry{pending("openssl", "3.0.1", "3.0.3", true)},
			patches.Outcome{Result: &proto.PatchInstallResult{Status: "installed", ExitCode: &exit0}}, patches.StateNotConfirmed},
		{"said installed, no re-scan", nil,
			patches.Outcome{Result: &proto.PatchInstallResult{Status: "installed", ExitCode: &exit0}, RescanErr: "timed out"}, patches.StateNotConfirmed},
		{"already installed", []proto.PatchEntry{installed("openssl", "3.0.2")},
			patches.Outcome{Result: &proto.PatchInstallResult{Status: "already_installed", AlreadyInstalled: true}}, patches.StateAlreadyInstalled},
		{"failed", []proto.PatchEntry{pending("openssl", "3.0.1", "3.0.2", true)},
			patches.Outcome{Result: &proto.PatchInstallResult{Status: "failed", ExitCode: &exit100, Message: "apt-get exited 100",
				LogExcerpt: "E: Could not get lock"}}, patches.StateFailed},
		{"answer lost, shown installed", []proto.PatchEntry{installed("openssl", "3.0.2")},
			patches.Outcome{ErrCode: "operation_timed_out", ErrMessage: "the agent did not answer"}, patches.StateInstalled},
		{"refused", []proto.PatchEntry{pending("openssl", "3.0.1", "3.0.2", true)},
			patches.Outcome{ErrCode: "unsupported", ErrMessage: "no installer"}, patches.StateFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.device(t, "web-1", "a")
			f.report(t, "web-1", nil, pending("openssl", "3.0.1", "3.0.2", true))
			inst, _, err := f.svc.RequestInstall(t.Context(), cairn.AllSites, patches.Request{DeviceGUID: "web-1", PatchKey: "pkg:openssl=3.0.2", Actor: "admin"})
			require.NoError(t, err)
			_, _, err = f.svc.Begin(t.Context(), inst.ID)
			require.NoError(t, err)
			out := tc.out
			if tc.rescan != nil {
				f.report(t, "web-1", nil, tc.rescan...)
				out.Rescanned = true
			}
			got, err := f.svc.Conclude(t.Context(), inst.ID, out)
			require.NoError(t, err)
			require.Equal(t, tc.want, got.State, got.Message)
			require.False(t, got.Open())
			require.NotNil(t, got.FinishedAt)
			require.Equal(t, tc.want == patches.StateAlreadyInstalled, got.AlreadyInstalled)
			if tc.want == patches.StateFailed && out.Result != nil {
				require.Equal(t, int32(100), *got.ExitCode)
				require.Equal(t, "E: Could not get lock", got.LogExcerpt)
			}
			// A finished install keeps its outcome; its order again runs nothing.
			again, err := f.svc.Conclude(t.Context(), inst.ID, patches.Outcome{ErrCode: "x"})
			require.NoError(t, err)
			require.Equal(t, tc.want, again.State)
			_, run, err := f.svc.Begin(t.Context(), inst.ID)
			require.NoError(t, err)
			require.False(t, run)
		})
	}
}
