package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
)

// downSchedules is the Temporal side of scheduled jobs while the Schedule
// API fails: every mirror of a save fails as an unreachable frontend does.
type downSchedules struct{ scheduledjobs.Schedules }

func (downSchedules) Apply(context.Context, scheduledjobs.Job) error {
	return serviceerror.NewUnavailable("the schedule API is unreachable")
}

func (downSchedules) Remove(context.Context, int64) error {
	return serviceerror.NewUnavailable("the schedule API is unreachable")
}

// A scheduled job is committed first and its Schedule applied after the
// commit: a Schedule API failure during a save does not undo it (nor hold
// a transaction across the call), and the reconciliation the
// maintenance:job-schedules Schedule runs makes Temporal match the rows.
func TestScheduledJobSaveSurvivesAScheduleAPIFailure(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	asm := f.testAssembly(t, fl.admin, "reconcile-me", "script")
	ctx := context.Background()
	core := f.engine.core
	create := func(schedule map[string]any) int64 {
		t.Helper()
		r := f.do(t, "POST", "/api/scheduled_jobs", fl.admin, jobBody(asm, schedule, map[string]any{"sites": []int64{fl.siteA}}))
		require.Equal(t, 201, r.Status, r.Raw)
		return int64(r.Body["id"].(float64))
	}
	toggled := create(map[string]any{"type": "interval", "every_seconds": 900})
	deleted := create(map[string]any{"type": "cron", "expression": "0 5 * * *"})
	require.NotNil(t, f.describeJobSchedule(t, toggled))
	require.NotNil(t, f.describeJobSchedule(t, deleted))

	core.Jobs.SetSchedules(downSchedules{core.JobSched})
	created := create(map[string]any{"type": "cron", "expression": "15 2 * * *"})
	r := f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d", created), fl.admin, nil)
	require.Equal(t, 200, r.Status, "the job is saved although its Schedule is not: %s", r.Raw)
	require.Nil(t, f.describeJobSchedule(t, created))
	r = f.do(t, "POST", fmt.Sprintf("/api/scheduled_jobs/%d/toggle", toggled), fl.admin, map[string]any{"enabled": false})
	require.Equal(t, 200, r.Status, r.Raw)
	require.False(t, f.describeJobSchedule(t, toggled).Schedule.State.Paused)
	r = f.do(t, "DELETE", fmt.Sprintf("/api/scheduled_jobs/%d", deleted), fl.admin, nil)
	require.Equal(t, 204, r.Status, r.Raw)
	require.NotNil(t, f.describeJobSchedule(t, deleted))

	// The Schedule API is back; the maintenance job reconciles. The
	// schedule list is eventually consistent: the orphan must be visible
	// to the reconciliation before it can be removed.
	core.Jobs.SetSchedules(core.JobSched)
	maint := &activities.ScheduledJobs{Schedules: core}
	require.Eventually(t, func() bool {
		_, err := maint.ReconcileJobSchedules(ctx)
		require.NoError(t, err)
		return f.describeJobSchedule(t, deleted) == nil
	}, time.Minute, 500*time.Millisecond)
	d := f.describeJobSchedule(t, created)
	require.NotNil(t, d, "the job created while the API failed has its Schedule")
	require.Len(t, d.Schedule.Spec.Calendars, 1)
	require.False(t, d.Schedule.State.Paused)
	require.True(t, f.describeJobSchedule(t, toggled).Schedule.State.Paused, "the disabled job's Schedule is paused")
	r = f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d", deleted), fl.admin, nil)
	require.Equal(t, 404, r.Status, r.Raw)
}
