package patches

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// recordedStep is one recorded download or installation: the progress
// percentages WUA reported, then its result.
type recordedStep struct {
	Progress []int        `json:"progress"`
	Result   WUAOperation `json:"result"`
}

// recordedUpdater replays a recorded Windows Update Agent for installs
// (testdata/wua-install.json): the pending and installed searches, and
// per update ID the download's and installation's progress and result.
// An install moves the update from pending to installed, as WUA does.
type recordedUpdater struct {
	mu        sync.Mutex
	Pending   []WUAUpdate             `json:"pending"`
	Installed []WUAUpdate             `json:"installed"`
	Downloads map[string]recordedStep `json:"downloads"`
	Installs  map[string]recordedStep `json:"installs"`
	searchErr error
	calls     []string
}

func loadUpdater(t *testing.T) *recordedUpdater {
	t.Helper()
	var r recordedUpdater
	require.NoError(t, json.Unmarshal([]byte(fixture(t, "wua-install.json")), &r))
	return &r
}

func (r *recordedUpdater) Search(_ context.Context, criteria string) ([]WUAUpdate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, "search "+criteria)
	if r.searchErr != nil {
		return nil, r.searchErr
	}
	switch criteria {
	case PendingCriteria:
		return append([]WUAUpdate(nil), r.Pending...), nil
	case InstalledCriteria:
		return append([]WUAUpdate(nil), r.Installed...), nil
	}
	return nil, fmt.Errorf("unexpected criteria %q", criteria)
}

func (r *recordedUpdater) step(kind string, steps map[string]recordedStep, id string, rev int, progress func(int)) (WUAOperation, error) {
	r.mu.Lock()
	r.calls = append(r.calls, fmt.Sprintf("%s %s/%d", kind, strings.ToLower(id), rev))
	s, ok := steps[strings.ToLower(id)]
	r.mu.Unlock()
	if !ok {
		return WUAOperation{}, fmt.Errorf("no recorded %s of %s", kind, id)
	}
	for _, p := range s.Progress {
		progress(p)
	}
	return s.Result, nil
}

func (r *recordedUpdater) Download(_ context.Context, id string, rev int, progress func(int)) (WUAOperation, error) {
	return r.step("download", r.Downloads, id, rev, progress)
}

func (r *recordedUpdater) Install(_ context.Context, id string, rev int, progress func(int)) (WUAOperation, error) {
	op, err := r.step("install", r.Installs, id, rev, progress)
	if err == nil && (op.ResultCode == WUAResultSucceeded || op.ResultCode == WUAResultSucceededWithErrors) {
		r.mu.Lock()
		for i, u := range r.Pending {
			if strings.EqualFold(u.UpdateID, id) {
				r.Installed = append(r.Installed, u)
				r.Pending = append(r.Pending[:i], r.Pending[i+1:]...)
				break
			}
		}
		r.mu.Unlock()
	}
	return op, err
}

// Installs through the Windows Update Agent against the recorded fake:
// matching by identity and revision first, then KB, then title; already
// installed; download and installation progress; failure HRESULTs and
// result codes mapped; the reboot the installation asks for reported.
func TestWUAInstaller(t *testing.T) {
	t.Parallel()
	cu := "6c5b1f2a-3e0d-4c8b-9f00-1a2b3c4d5e6f"
	for _, tc := range []struct {
		name     string
		req      proto.PatchInstallRequest
		status   string
		already  bool
		reboot   bool
		message  string
		calls    []string
		progress []string
	}{
		{name: "identity and revision", req: proto.PatchInstallRequest{UpdateID: strings.ToUpper(cu), Revision: 201, KB: "KB2267602"},
			status: proto.PatchInstallDone, reboot: true, message: "(KB5034123) installed; a reboot is required",
			calls: []string{"search " + PendingCriteria, "download " + cu + "/201", "install " + cu + "/201"},
			progress: []string{"starting 0", "downloading 0", "downloading 0", "downloading 35", "downloading 70", "downloading 100",
				"installing 0", "installing 0", "installing 50", "installing 100", "finished 100"}},
		{name: "a stale revision falls back to the KB", req: proto.PatchInstallRequest{UpdateID: cu, Revision: 200, KB: "kb 2267602"},
			status: proto.PatchInstallDone, message: "KB2267602 (Version 1.403.3020.0) installed",
			calls: []string{"search " + PendingCriteria, "search " + InstalledCriteria, "download a1b2c3d4-0000-4000-8000-000000000001/1",
				"install a1b2c3d4-0000-4000-8000-000000000001/1"}},
		{name: "title, succeeded with errors", req: proto.PatchInstallRequest{Title: "intel - system - 10.1.1.44"},
			status: proto.PatchInstallDone, message: "installed (succeeded with errors: 0x80240017 WU_E_NOT_APPLICABLE)"},
		{name: "already installed by KB", req: proto.PatchInstallRequest{KB: "KB5033920", Title: "whatever"},
			status: proto.PatchInstallAlready, already: true, message: "(KB5033920) is installed",
			calls: []string{"search " + PendingCriteria, "search " + InstalledCriteria}},
		{name: "already installed by identity", req: proto.PatchInstallRequest{UpdateID: "c3d4e5f6-0000-4000-8000-000000000003", Revision: 200},
			status: proto.PatchInstallAlready, already: true},
		{name: "offered no more", req: proto.PatchInstallRequest{KB: "KB1234567"},
			status: proto.PatchInstallFailed, message: "Windows Update offers no update matching KB1234567"},
		{name: "download failure", req: proto.PatchInstallRequest{KB: "KB5034500"},
			status: proto.PatchInstallFailed, message: "download of 2024-01 Servicing Stack Update (KB5034500) failed: 0x80246008 WU_E_DM_FAILTOCONNECTTOBITS",
			calls:    []string{"search " + PendingCriteria, "search " + InstalledCriteria, "download d4e5f6a7-0000-4000-8000-000000000004/100"},
			progress: []string{"starting 0", "downloading 0", "downloading 0", "downloading 12"}},
		{name: "installation failure", req: proto.PatchInstallRequest{KB: "KB5034600"},
			status: proto.PatchInstallFailed, message: "installation of 2024-01 .NET 8.0.1 Update (KB5034600) failed: 0x80070643 ERROR_INSTALL_FAILURE"},
		{name: "installation aborted", req: proto.PatchInstallRequest{KB: "KB5034700"},
			status: proto.PatchInstallFailed, message: "installation of Microsoft Edge Update (KB5034700) aborted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wua := loadUpdater(t)
			var progress []string
			tc.req.InstallID = "i1"
			res, err := (&WUAInstaller{WUA: wua}).Install(t.Context(), tc.req, func(p Progress) {
				progress = append(progress, fmt.Sprintf("%s %d", p.Phase, p.Percent))
			})
			require.NoError(t, err)
			require.Equal(t, tc.status, res.Status, res.Message)
			require.Equal(t, tc.already, res.AlreadyInstalled)
			require.Equal(t, tc.reboot, res.RebootRequired)
			require.Contains(t, res.Message, tc.message)
			require.Nil(t, res.ExitCode, "WUA has no exit code; the HRESULT is in the message")
			if tc.calls != nil {
				require.Equal(t, tc.calls, wua.calls)
			}
			if tc.progress != nil {
				require.Equal(t, tc.progress, progress)
			}
			if tc.status == proto.PatchInstallDone {
				// Asked again, the update is installed now.
				again, err := (&WUAInstaller{WUA: wua}).Install(t.Context(), tc.req, func(Progress) {})
				require.NoError(t, err)
				require.Equal(t, proto.PatchInstallAlready, again.Status, again.Message)
				require.True(t, again.AlreadyInstalled)
			}
		})
	}
}

// A request naming no update is refused; a Windows Update Agent that
// cannot be asked is an error (the handler answers op_failed), not a
// failed install.
func TestWUAInstallerErrors(t *testing.T) {
	t.Parallel()
	wua := loadUpdater(t)
	_, err := (&WUAInstaller{WUA: wua}).Install(t.Context(), proto.PatchInstallRequest{InstallID: "i1", Package: "openssl"}, func(Progress) {})
	require.ErrorIs(t, err, ErrNoUpdate)
	wua.searchErr = ErrNoWUA
	_, err = (&WUAInstaller{WUA: wua}).Install(t.Context(), proto.PatchInstallRequest{InstallID: "i1", KB: "KB5034123"}, func(Progress) {})
	require.ErrorIs(t, err, ErrNoWUA)
	require.False(t, errors.Is(err, ErrNoUpdate))
}

// MatchUpdate's order: identity and revision, then KB, then title.
func TestMatchUpdate(t *testing.T) {
	t.Parallel()
	ups := []WUAUpdate{
		{UpdateID: "AAA", Revision: 2, Title: "Update A (KB1000001)"},
		{UpdateID: "bbb", Revision: 1, Title: "Update B", KBs: []string{"1000002"}},
		{UpdateID: "ccc", Revision: 5, Title: "Update C"},
	}
	for _, tc := range []struct {
		req  proto.PatchInstallRequest
		want int
	}{
		{proto.PatchInstallRequest{UpdateID: "aaa", Revision: 2, KB: "KB1000002"}, 0},
		{proto.PatchInstallRequest{UpdateID: "aaa", KB: "KB1000002"}, 0},
		{proto.PatchInstallRequest{UpdateID: "aaa", Revision: 3, KB: "KB1000002"}, 1},
		{proto.PatchInstallRequest{KB: "1000001"}, 0},
		{proto.PatchInstallRequest{UpdateID: "zzz", Title: " update c "}, 2},
		{proto.PatchInstallRequest{Title: "Update"}, -1},
		{proto.PatchInstallRequest{}, -1},
	} {
		require.Equal(t, tc.want, MatchUpdate(ups, tc.req), "%+v", tc.req)
	}
}
