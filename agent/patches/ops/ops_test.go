package ops_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/patches"
	"github.com/cairn-rmm/cairn/agent/patches/ops"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// recorder is the Engine's side of the progress posts.
type recorder struct {
	mu    sync.Mutex
	posts []proto.PatchInstallProgress
	paths []string
}

func (r *recorder) Call(_ context.Context, method, path string, in, _ any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paths = append(r.paths, method+" "+path)
	r.posts = append(r.posts, in.(proto.PatchInstallProgress))
	return nil
}

// scripted reports the given progress and answers res.
type scripted struct {
	steps []patches.Progress
	res   proto.PatchInstallResult
	err   error
	got   proto.PatchInstallRequest
}

func (s *scripted) Install(_ context.Context, req proto.PatchInstallRequest, progress func(patches.Progress)) (proto.PatchInstallResult, error) {
	s.got = req
	for _, p := range s.steps {
		progress(p)
	}
	return s.res, s.err
}

func setup(t *testing.T, inst patches.Installer) runtime.Handler {
	t.Helper()
	h := runtime.NewHandlers()
	at := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	require.NoError(t, ops.Register(h, ops.Options{Installer: inst, ProgressInterval: time.Second, Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		at = at.Add(100 * time.Millisecond)
		return at
	}}))
	fn := h.Lookup(proto.EventPatchInstall)
	require.NotNil(t, fn)
	return fn
}

func TestInstallPostsProgressAndAnswers(t *testing.T) {
	t.Parallel()
	job := int64(7)
	inst := &scripted{steps: []patches.Progress{
		{Phase: "starting"}, {Phase: "downloading", Percent: 10}, {Phase: "downloading", Percent: 20},
		{Phase: "installing", Percent: 50}, {Phase: "installing", Percent: 100},
	}, res: proto.PatchInstallResult{Status: proto.PatchInstallDone}}
	fn := setup(t, inst)
	rec := &recorder{}
	payload, _ := json.Marshal(proto.PatchInstallRequest{InstallID: "i1", ScheduledJobID: &job, RunID: "r1", Package: "hello", PatchKey: "pkg:hello=1.1"})
	out, err := fn(t.Context(), rec, payload)
	require.NoError(t, err)
	require.Equal(t, proto.PatchInstallResult{Status: proto.PatchInstallDone}, out)
	require.Equal(t, "hello", inst.got.Package)
	var seen []string
	for i, p := range rec.posts {
		require.Equal(t, "POST /api/agent/patches/install-progress", rec.paths[i])
		require.Equal(t, "i1", p.InstallID)
		require.Equal(t, &job, p.ScheduledJobID)
		require.Equal(t, "r1", p.RunID)
		require.False(t, p.CapturedAt.IsZero())
		seen = append(seen, p.Phase)
	}
	require.Equal(t, []string{"starting", "downloading", "installing", "installing"}, seen,
		"a new phase always posts, one phase at most every interval, 100% always")
}

func TestInstallRefusesMalformedRequests(t *testing.T) {
	t.Parallel()
	fn := setup(t, &scripted{})
	for _, payload := range []string{`{`, `{"install_id":"i1"}`, `{"package":"x"}`} {
		_, err := fn(t.Context(), &recorder{}, json.RawMessage(payload))
		var pe *proto.Error
		require.ErrorAs(t, err, &pe, payload)
		require.Equal(t, proto.CodeOpInvalid, pe.Code)
	}
}

func TestNoInstallerNoCapability(t *testing.T) {
	t.Parallel()
	h := runtime.NewHandlers()
	require.NoError(t, ops.Register(h, ops.Options{}))
	require.NotContains(t, proto.HandlerCapabilities(h.Types()), proto.CapPatchInstall)
	require.NoError(t, ops.Register(h, ops.Options{Installer: &scripted{}}))
	require.Contains(t, proto.HandlerCapabilities(h.Types()), proto.CapPatchInstall)
}

// A Windows install names an update (identity and revision, KB or title),
// not a package: the handler passes it to the installer; an installer
// that finds no update named answers op_invalid.
func TestInstallOfAWindowsUpdate(t *testing.T) {
	t.Parallel()
	inst := &scripted{res: proto.PatchInstallResult{Status: proto.PatchInstallAlready, AlreadyInstalled: true}}
	fn := setup(t, inst)
	out, err := fn(t.Context(), &recorder{}, json.RawMessage(`{"install_id":"i1","update_id":"6c5b1f2a","revision":201,"kb":"KB5034123"}`))
	require.NoError(t, err)
	require.Equal(t, inst.res, out)
	require.Equal(t, proto.PatchInstallRequest{InstallID: "i1", UpdateID: "6c5b1f2a", Revision: 201, KB: "KB5034123"}, inst.got)

	fn = setup(t, &scripted{err: patches.ErrNoUpdate})
	_, err = fn(t.Context(), &recorder{}, json.RawMessage(`{"install_id":"i1","title":"x"}`))
	var pe *proto.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, proto.CodeOpInvalid, pe.Code)
}
