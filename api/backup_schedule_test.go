package api_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Scheduled automatic backups (issue 26): admin-only settings, validated
// (a directory the Engine cannot write is refused), and a run writes an
// encrypted export into the directory that analyze accepts, recorded on
// the Server page.
func TestServerBackupSchedule(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	op := f.operator(t, "schedule-operator")
	f.createSite(t, admin, "scheduled")
	dir := filepath.Join(t.TempDir(), "backups")

	r := f.do(t, "GET", "/api/server/backup/schedule", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	s := r.Body["settings"].(map[string]any)
	require.Equal(t, false, s["enabled"])
	require.EqualValues(t, 24, s["interval_hours"])
	require.Empty(t, r.Body["runs"])

	valid := map[string]any{"enabled": true, "directory": dir, "interval_hours": 24, "keep_daily": 7, "keep_weekly": 4, "keep_monthly": 6}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range valid {
			m[kk] = vv
		}
		m[k] = v
		return m
	}
	blocker := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{with("directory", "relative"), "directory"},
		{with("directory", ""), "directory"},
		{with("directory", filepath.Join(blocker, "sub")), "directory"},
		{with("interval_hours", 0), "interval_hours"},
		{with("keep_weekly", -1), "keep_weekly"},
	} {
		r := f.do(t, "PUT", "/api/server/backup/schedule", admin, c.body)
		require.Equal(t, 400, r.Status, r.Raw)
		require.NotEmpty(t, r.field(c.field), r.Raw)
	}
	require.Equal(t, false, f.do(t, "GET", "/api/server/backup/schedule", admin, nil).Body["settings"].(map[string]any)["enabled"], "nothing half-applied")

	r = f.do(t, "PUT", "/api/server/backup/schedule", admin, valid)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, dir, r.Body["settings"].(map[string]any)["directory"])
	require.NotNil(t, r.Body["next_due_at"])

	// A drill before any backup: it fails, and says why.
	drill := func() map[string]any {
		t.Helper()
		before := len(f.do(t, "GET", "/api/server/backup/schedule", admin, nil).Body["drills"].([]any))
		r := f.do(t, "POST", "/api/server/backup/drill/run", admin, nil)
		require.Equal(t, 202, r.Status, r.Raw)
		var d map[string]any
		require.Eventually(t, func() bool {
			drills := f.do(t, "GET", "/api/server/backup/schedule", admin, nil).Body["drills"].([]any)
			if len(drills) <= before {
				return false
			}
			d = drills[0].(map[string]any)
			return d["status"] != "running"
		}, 120*time.Second, 100*time.Millisecond)
		return d
	}
	d := drill()
	require.Equal(t, "failed", d["status"], d)
	require.Contains(t, d["detail"], "no scheduled backup")

	r = f.do(t, "POST", "/api/server/backup/schedule/run", admin, nil)
	require.Equal(t, 202, r.Status, r.Raw)
	var run map[string]any
	require.Eventually(t, func() bool {
		runs := f.do(t, "GET", "/api/server/backup/schedule", admin, nil).Body["runs"].([]any)
		if len(runs) == 0 {
			return false
		}
		run = runs[0].(map[string]any)
		return run["status"] != "running"
	}, 60*time.Second, 100*time.Millisecond)
	require.Equal(t, "succeeded", run["status"], run)
	file := filepath.Join(dir, run["file"].(string))
	fi, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.EqualValues(t, fi.Size(), run["size_bytes"])
	content, err := os.ReadFile(file)
	require.NoError(t, err)
	a := f.uploadBackup(t, "/api/server/backup/analyze", admin, nil, content)
	require.Equal(t, 200, a.Status, a.Raw)
	require.Equal(t, true, a.Body["restorable"], a.Raw)
	require.NotNil(t, f.do(t, "GET", "/api/server/backup/schedule", admin, nil).Body["last_success_at"])

	// The drill restores that file into a scratch database: it passes.
	d = drill()
	require.Equal(t, "succeeded", d["status"], d)
	require.Contains(t, d["detail"], "passed: "+run["file"].(string))

	for _, c := range []struct{ method, path string }{
		{"GET", "/api/server/backup/schedule"}, {"PUT", "/api/server/backup/schedule"}, {"POST", "/api/server/backup/schedule/run"},
		{"POST", "/api/server/backup/drill/run"},
	} {
		require.Equal(t, 403, f.do(t, c.method, c.path, op, valid).Status, c.path)
	}
}
