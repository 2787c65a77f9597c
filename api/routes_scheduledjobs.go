package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
)

// scheduledJobRoutes are the scheduled jobs (docs/api.md "Automation:
// scheduled jobs") and the site workers' scheduled lanes.
func (s *Server) scheduledJobRoutes() []Route {
	const one = "/api/scheduled_jobs/{id}"
	return []Route{
		{"GET", "/api/scheduled_jobs", AuthToken, getAction(s, func(r *http.Request) (jobListJSON, error) {
			jobs, err := s.Jobs.List(r.Context(), principal(r.Context()).SiteScope())
			out := jobListJSON{Jobs: make([]jobJSON, len(jobs))}
			for i, j := range jobs {
				out.Jobs[i] = newJobJSON(j)
			}
			return out, err
		}), "List scheduled jobs"},
		{"POST", "/api/scheduled_jobs", AuthToken, jsonAction(s, http.StatusCreated, false, func(r *http.Request, req jobRequest) (jobJSON, error) {
			p := principal(r.Context())
			j, err := s.Jobs.Create(r.Context(), p.SiteScope(), p.Username, req.input())
			return newJobJSON(j), err
		}).Errors(cairn.ECodeUnavailable), "Create a scheduled job"},
		{"POST", "/api/scheduled_jobs/schedule_preview", AuthToken, jsonAction(s, http.StatusOK, false, func(r *http.Request, req previewRequest) (previewJSON, error) {
			if req.Schedule == nil {
				return previewJSON{}, cairn.Invalid("schedule", "is required")
			}
			next, err := s.Jobs.PreviewSchedule(*req.Schedule, 5)
			if next == nil {
				next = []time.Time{}
			}
			return previewJSON{NextRuns: next}, err
		}), "Preview a schedule's next runs"},
		{"GET", one, AuthToken, getAction(s, func(r *http.Request) (jobJSON, error) {
			id, err := jobID(r)
			if err != nil {
				return jobJSON{}, err
			}
			j, err := s.Jobs.Get(r.Context(), principal(r.Context()).SiteScope(), id)
			return newJobJSON(j), err
		}).Errors(cairn.ECodeNotFound), "Get a scheduled job"},
		{"PUT", one, AuthToken, jsonAction(s, http.StatusOK, false, func(r *http.Request, req jobRequest) (jobJSON, error) {
			id, err := jobID(r)
			if err != nil {
				return jobJSON{}, err
			}
			p := principal(r.Context())
			j, err := s.Jobs.Update(r.Context(), p.SiteScope(), p.Username, id, req.input())
			return newJobJSON(j), err
		}).Errors(cairn.ECodeNotFound, cairn.ECodeUnavailable), "Update a scheduled job"},
		{"DELETE", one, AuthToken, jsonAction(s, http.StatusNoContent, true, func(r *http.Request, _ struct{}) (struct{}, error) {
			id, err := jobID(r)
			if err != nil {
				return struct{}{}, err
			}
			return struct{}{}, s.Jobs.Delete(r.Context(), principal(r.Context()).SiteScope(), id)
		}).Errors(cairn.ECodeNotFound, cairn.ECodeUnavailable), "Delete a scheduled job"},
		{"POST", one + "/toggle", AuthToken, jsonAction(s, http.StatusOK, false, func(r *http.Request, req toggleRequest) (jobJSON, error) {
			id, err := jobID(r)
			if err != nil {
				return jobJSON{}, err
			}
			p := principal(r.Context())
			j, err := s.Jobs.Toggle(r.Context(), p.SiteScope(), p.Username, id, *req.Enabled)
			return newJobJSON(j), err
		}).Errors(cairn.ECodeNotFound, cairn.ECodeUnavailable), "Enable or disable a scheduled job"},
		{"POST", one + "/rerun", AuthToken, jsonAction(s, http.StatusAccepted, true, func(r *http.Request, _ struct{}) (jobRunIDJSON, error) {
			id, err := jobID(r)
			if err != nil {
				return jobRunIDJSON{}, err
			}
			runID, err := uuid.NewV7()
			if err != nil {
				return jobRunIDJSON{}, err
			}
			p := principal(r.Context())
			err = s.Jobs.Rerun(r.Context(), p.SiteScope(), p.Username, id, cairn.RunID(runID.String()))
			return jobRunIDJSON{RunID: cairn.RunID(runID.String())}, err
		}).Errors(cairn.ECodeNotFound, scheduledjobs.ECodeJobDisabled, cairn.ECodeUnavailable, ECodeTemporalUnavailable), "Run a scheduled job again"},
		{"GET", one + "/runs", AuthToken, getAction(s, func(r *http.Request) (runListJSON, error) {
			id, err := jobID(r)
			if err != nil {
				return runListJSON{}, err
			}
			limit, err := queryInt(r, "limit", scheduledjobs.DefaultRunPage, 1, scheduledjobs.MaxRunPage)
			if err != nil {
				return runListJSON{}, err
			}
			runs, err := s.Jobs.Runs(r.Context(), principal(r.Context()).SiteScope(), id, limit)
			if runs == nil {
				runs = []scheduledjobs.Run{}
			}
			return runListJSON{Runs: runs}, err
		}).Query(queryInteger("limit", "runs per page")).Errors(cairn.ECodeNotFound), "List a scheduled job's runs"},
		{"DELETE", one + "/runs", AuthToken, jsonAction(s, http.StatusNoContent, true, func(r *http.Request, _ struct{}) (struct{}, error) {
			id, err := jobID(r)
			if err != nil {
				return struct{}{}, err
			}
			return struct{}{}, s.Jobs.ClearRuns(r.Context(), principal(r.Context()).SiteScope(), id)
		}).Errors(cairn.ECodeNotFound), "Clear a scheduled job's runs"},
		{"GET", one + "/runs/{run_id}", AuthToken, getAction(s, func(r *http.Request) (jobRunJSON, error) {
			id, err := jobID(r)
			if err != nil {
				return jobRunJSON{}, err
			}
			scope := principal(r.Context()).SiteScope()
			if _, err := s.Jobs.Get(r.Context(), scope, id); err != nil {
				return jobRunJSON{}, err
			}
			run, err := s.Automation.GetRun(r.Context(), scope, pathParam(r, "run_id"), true)
			if err == nil && (run.ScheduledJobID == nil || *run.ScheduledJobID != id) {
				err = cairn.Errorf(cairn.ECodeNotFound, "run not found")
			}
			if err != nil {
				return jobRunJSON{}, err
			}
			out := jobRunJSON{runJSON: toRunJSON(run), ScheduledFor: run.ScheduledFor}
			if out.Results == nil {
				out.Results = []resultJSON{}
			}
			return out, nil
		}).Errors(cairn.ECodeNotFound), "Get a scheduled job run"},
		{"GET", "/api/devices/{guid}/job_runs", AuthToken, getAction(s, func(r *http.Request) (deviceRunsJSON, error) {
			limit, err := queryInt(r, "limit", scheduledjobs.DefaultRunPage, 1, scheduledjobs.MaxRunPage)
			if err != nil {
				return deviceRunsJSON{}, err
			}
			runs, err := s.Jobs.DeviceRuns(r.Context(), principal(r.Context()).SiteScope(), cairn.DeviceGUID(pathParam(r, "guid")), limit)
			if runs == nil {
				runs = []scheduledjobs.DeviceRun{}
			}
			return deviceRunsJSON{Results: runs}, err
		}).Query(queryInteger("limit", "runs per page")).Errors(cairn.ECodeNotFound), "List a device's job runs"},
		{"GET", "/api/server/site-worker-settings", AuthAdmin, getAction(s, func(r *http.Request) (siteWorkerSettingsJSON, error) {
			load, err := s.Slots.Load(r.Context())
			out := siteWorkerSettingsJSON{Sites: make([]siteLaneJSON, len(load))}
			for i, l := range load {
				out.Sites[i] = siteLaneJSON{SiteID: l.SiteID, Slug: l.Slug, ScheduledCapacity: l.Capacity, ActiveItems: l.ActiveItems,
					OnboardingCapacity: l.Onboarding}
			}
			return out, err
		}), "Get the site worker settings"},
	}
}

func jobID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(pathParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, cairn.Invalid("id", "must be a positive integer")
	}
	return id, nil
}

type jobRequest struct {
	Name       string                  `json:"name" limit:"max=200"`
	Kind       string                  `json:"kind"`
	AssemblyID *int64                  `json:"assembly_id"`
	WorkflowID *int64                  `json:"workflow_id"`
	Parameters map[string]any          `json:"parameters" limit:"max=64"`
	Targets    *scheduledjobs.Targets  `json:"targets"`
	Schedule   *scheduledjobs.Schedule `json:"schedule"`
	Options    *scheduledjobs.Options  `json:"options"`
	Enabled    *bool                   `json:"enabled"`
}

func (q jobRequest) validate() error {
	var v cairn.Validation
	if q.Targets == nil {
		v.Add("targets", "is required")
	}
	if q.Schedule == nil {
		v.Add("schedule", "is required")
	}
	return v.Err()
}

func (q jobRequest) input() scheduledjobs.Input {
	in := scheduledjobs.Input{Name: q.Name, Kind: q.Kind, AssemblyID: q.AssemblyID, WorkflowID: q.WorkflowID, Parameters: q.Parameters,
		Targets: *q.Targets, Schedule: *q.Schedule, Enabled: q.Enabled}
	if q.Options != nil {
		in.Options = *q.Options
	}
	return in
}

type toggleRequest struct {
	Enabled *bool `json:"enabled"`
}

func (q toggleRequest) validate() error {
	if q.Enabled == nil {
		return cairn.Invalid("enabled", "is required (true or false)")
	}
	return nil
}

type previewRequest struct {
	Schedule *scheduledjobs.Schedule `json:"schedule"`
}

type previewJSON struct {
	NextRuns []time.Time `json:"next_runs"`
}

// jobRunJSON is a quick run's shape plus the fire time a schedule gave it.
type jobRunJSON struct {
	runJSON
	ScheduledFor *time.Time `json:"scheduled_for"`
}

type jobRunIDJSON struct {
	RunID cairn.RunID `json:"run_id"`
}

type runListJSON struct {
	Runs []scheduledjobs.Run `json:"runs"`
}

type deviceRunsJSON struct {
	Results []scheduledjobs.DeviceRun `json:"results"`
}

type jobListJSON struct {
	Jobs []jobJSON `json:"jobs"`
}

type jobJSON struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	Kind         string `json:"kind"`
	AssemblyID   *int64 `json:"assembly_id"`
	AssemblyName string `json:"assembly_name"`
	// AssemblyVersion is the version a script job runs (signed when saved).
	AssemblyVersion *int32                `json:"assembly_version"`
	WorkflowID      *int64                `json:"workflow_id"`
	Parameters      map[string]any        `json:"parameters"`
	Targets         scheduledjobs.Targets `json:"targets"`
	// FilterScopeSiteIDs are the sites the job's filter targets may
	// reach (its last saver's); null: every site.
	FilterScopeSiteIDs []int64                `json:"filter_scope_site_ids" openapi:"nullable"`
	Schedule           scheduledjobs.Schedule `json:"schedule"`
	Options            scheduledjobs.Options  `json:"options"`
	Enabled            bool                   `json:"enabled"`
	CreatedBy          string                 `json:"created_by"`
	CreatedAt          time.Time              `json:"created_at"`
	UpdatedBy          string                 `json:"updated_by"`
	UpdatedAt          time.Time              `json:"updated_at"`
	NextRunAt          *time.Time             `json:"next_run_at"`
	LastRun            *scheduledjobs.LastRun `json:"last_run"`
}

func newJobJSON(j scheduledjobs.Job) jobJSON {
	return jobJSON{ID: j.ID, Name: j.Name, Kind: j.Kind, AssemblyID: j.AssemblyID, AssemblyName: j.AssemblyName, AssemblyVersion: j.AssemblyVersion, WorkflowID: j.WorkflowID,
		Parameters: j.Parameters, Targets: j.Targets, Schedule: j.Schedule, Options: j.Options, Enabled: j.Enabled,
		CreatedBy: j.CreatedBy, CreatedAt: j.CreatedAt, UpdatedBy: j.UpdatedBy, UpdatedAt: j.UpdatedAt, NextRunAt: j.NextRunAt,
		LastRun: j.LastRun, FilterScopeSiteIDs: filterScopeJSON(j.FilterScope)}
}

func filterScopeJSON(scope cairn.SiteScope) []int64 {
	if scope.All {
		return nil
	}
	return scope.IDs()
}

type siteWorkerSettingsJSON struct {
	Sites []siteLaneJSON `json:"sites"`
}

type siteLaneJSON struct {
	SiteID             cairn.SiteID `json:"site_id"`
	Slug               string       `json:"site_worker_slug"`
	ScheduledCapacity  int          `json:"scheduled_capacity"`
	ActiveItems        int          `json:"active_items"`
	OnboardingCapacity int          `json:"onboarding_capacity"`
}
