package engine

import (
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
	"github.com/cairn-rmm/cairn/workflows"
)

// scheduledJobsCapability is scheduled jobs: a Temporal Schedule per job
// fires ScheduledJobFire, which runs a script, a flow or an agent update
// on the job's targets through the site workers' scheduled lanes.
var scheduledJobsCapability = Capability{
	Name: "scheduledjobs",
	Codes: []cairn.Code{
		{ID: scheduledjobs.ECodeJobDisabled, Status: http.StatusConflict},
	},
	API:       func(*Engine) api.Area { return api.ScheduledJobsArea },
	Workflows: []any{workflows.ScheduledJobFire},
	Activities: func(e *Engine) []any {
		return []any{&activities.ScheduledJobs{Jobs: e.Jobs, Slots: e.Slots, Runs: e.JobRuns, Flows: e.Flows,
			Updates: e.Updates, UpdateStarter: e.updateStarter(), Schedules: e}}
	},
	Maintenance: []workflows.MaintenanceJob{
		// Every job's Schedule made to match its committed row: a save
		// mirrors the row after its commit, and a mirror that failed
		// (Temporal down or busy) is repaired here.
		{Name: workflows.JobJobSchedules, Every: 5 * time.Minute, Activity: "ReconcileJobSchedules"},
	},
}
