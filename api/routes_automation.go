package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
	"github.com/cairn-rmm/cairn/workflows"
)

// quickRunRoutes run a script on devices now, and the agent side of
// script runs (docs/api.md "Quick runs").
func (s *Server) quickRunRoutes() []Route {
	return []Route{
		{"POST", "/api/scripts/quick_run", AuthToken, withBodyLimit(maxScriptBody, jsonAction(s, http.StatusAccepted, false, s.quickRun)).Errors(ECodeTemporalUnavailable, cairn.ECodeUnavailable, cairn.ECodeAssemblyChanged), "Quick-run a script"},
		{"GET", "/api/scripts/quick_run/{run_id}", AuthToken, getAction(s, func(r *http.Request) (runJSON, error) {
			run, err := s.Automation.GetRun(r.Context(), principal(r.Context()).SiteScope(), chi.URLParam(r, "run_id"), true)
			return toRunJSON(run), err
		}).Errors(cairn.ECodeNotFound), "Get a quick run"},
		{"GET", "/api/server/ansible-runner-settings", AuthAdmin, getAction(s, func(*http.Request) (automation.AnsibleRunner, error) {
			capacity := scheduledjobs.DefaultScheduledCapacity
			if s.Slots != nil {
				capacity = s.Slots.Capacity
			}
			return automation.AnsibleRunnerSettings(capacity, scheduledjobs.SlotAnsible), nil
		}), "Get the Ansible runner's settings"},
		{"POST", proto.PathScriptOutput, AuthDevice, withBodyLimit(maxOutputBody, jsonAction(s, http.StatusNoContent, false, func(r *http.Request, req proto.ScriptOutput) (struct{}, error) {
			return struct{}{}, s.Automation.RecordOutput(r.Context(), deviceFrom(r.Context()).GUID, req)
		})), "Agent: send script output"},
		{"POST", proto.PathScriptRequest, AuthDevice, jsonAction(s, http.StatusOK, true, func(r *http.Request, _ struct{}) (proto.ScriptRequestResponse, error) {
			jobs, err := s.Automation.QueuedWork(r.Context(), deviceFrom(r.Context()).GUID)
			if err != nil || len(jobs) == 0 {
				return proto.ScriptRequestResponse{Status: "idle"}, err
			}
			return proto.ScriptRequestResponse{Status: "work", Jobs: jobs}, nil
		}), "Agent: fetch its next script"},
		{"POST", proto.PathScriptResult, AuthDevice, withBodyLimit(maxOutputBody, jsonAction(s, http.StatusNoContent, false, func(r *http.Request, req proto.ScriptResultPost) (struct{}, error) {
			return struct{}{}, s.Automation.RecordQueuedResult(r.Context(), deviceFrom(r.Context()).GUID, req)
		})), "Agent: report a script result"},
	}
}

// Body limits: a 256 KiB script escaped as JSON, and two 1 MiB outputs
// escaped as JSON (a control byte becomes six).
const (
	maxScriptBody = 2 << 20
	maxOutputBody = 14 << 20
)

type quickRunRequest struct {
	DeviceGUIDs []string `json:"device_guids" limit:"max=1000"`
	// FilterID aims the run at the devices a saved filter matches now
	// (instead of device_guids), at most automation.MaxTargets of them.
	FilterID   *int64 `json:"filter_id"`
	AssemblyID *int64 `json:"assembly_id"`
	// AssemblyVersion runs that version of the assembly (0 or absent:
	// the current one); AssemblySHA256, when set, must be its body's
	// hash, so the run executes what the caller reviewed or answers
	// assembly_changed.
	AssemblyVersion int            `json:"assembly_version"`
	AssemblySHA256  string         `json:"assembly_sha256"`
	Language        string         `json:"language"`
	Body            string         `json:"body" limit:"max=262144"`
	TimeoutSeconds  int            `json:"timeout_seconds"`
	Parameters      map[string]any `json:"parameters" openapi:"types=string|number|boolean"`
	// RunAs is system or current_user (the signed-in user's session);
	// empty takes the assembly's, system for ad-hoc content.
	RunAs string `json:"run_as" limit:"max=32"`
}

type runIDJSON struct {
	RunID cairn.RunID `json:"run_id"`
}

// quickRun signs one payload per device in this process (the one serving
// the operator, whose cipher is unlocked), records the run, and starts
// its workflow.
func (s *Server) quickRun(r *http.Request, req quickRunRequest) (runIDJSON, error) {
	ctx := r.Context()
	p := principal(ctx)
	guids := req.DeviceGUIDs
	if req.FilterID != nil {
		var err error
		if guids, err = s.quickRunFilterDevices(ctx, p.SiteScope(), *req.FilterID, len(req.DeviceGUIDs) > 0); err != nil {
			return runIDJSON{}, err
		}
	}
	targets, err := s.Automation.ResolveTargets(ctx, p.SiteScope(), guids)
	if err != nil {
		return runIDJSON{}, err
	}
	run, err := s.Automation.CreateRun(ctx, automation.RunSpec{Kind: automation.RunQuick, Trigger: automation.TriggerManual,
		AssemblyID: req.AssemblyID, AssemblyVersion: req.AssemblyVersion, AssemblySHA256: req.AssemblySHA256, Language: req.Language, Body: req.Body, TimeoutSeconds: req.TimeoutSeconds, RunAs: req.RunAs,
		Parameters: req.Parameters, RequestedBy: p.Username, Targets: targets})
	if err != nil {
		return runIDJSON{}, err
	}
	if err := s.Runs.Start(ctx, workflows.JobRunInput{RunID: run.ID}); err != nil {
		// The operator is told the run was not started; keep no run
		// that would stay pending with nothing to execute it.
		if derr := s.Automation.DiscardRun(context.WithoutCancel(ctx), run.ID); derr != nil {
			s.reqLog(r).Error("discard a job run that did not start", "run_id", run.ID, "err", derr)
		}
		return runIDJSON{}, err
	}
	return runIDJSON{RunID: run.ID}, nil
}

type countsJSON struct {
	Pending   int64 `json:"pending"`
	Running   int64 `json:"running"`
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	TimedOut  int64 `json:"timed_out"`
	Skipped   int64 `json:"skipped"`
}

type resultJSON struct {
	GUID            cairn.DeviceGUID  `json:"guid"`
	Hostname        string            `json:"hostname"`
	Status          string            `json:"status"`
	ExitCode        *int32            `json:"exit_code"`
	Stdout          string            `json:"stdout"`
	Stderr          string            `json:"stderr"`
	StdoutTruncated bool              `json:"stdout_truncated"`
	StderrTruncated bool              `json:"stderr_truncated"`
	ErrorCode       string            `json:"error_code"`
	ErrorMessage    string            `json:"error_message"`
	OperationID     cairn.OperationID `json:"operation_id"`
	DurationMS      *int64            `json:"duration_ms"`
	StartedAt       *time.Time        `json:"started_at"`
	FinishedAt      *time.Time        `json:"finished_at"`
	// Ansible is a playbook run's recap (null for scripts).
	Ansible *proto.AnsibleRecap `json:"ansible"`
}

type runJSON struct {
	RunID           cairn.RunID  `json:"run_id"`
	Kind            string       `json:"kind"`
	Status          string       `json:"status"`
	AssemblyID      *int64       `json:"assembly_id"`
	AssemblyName    string       `json:"assembly_name"`
	AssemblyVersion *int32       `json:"assembly_version"`
	Language        string       `json:"language"`
	RunAs           string       `json:"run_as"`
	RequestedBy     string       `json:"requested_by"`
	Trigger         string       `json:"trigger"`
	ScheduledJobID  *int64       `json:"scheduled_job_id"`
	TimeoutSeconds  int          `json:"timeout_seconds"`
	CreatedAt       time.Time    `json:"created_at"`
	StartedAt       *time.Time   `json:"started_at"`
	FinishedAt      *time.Time   `json:"finished_at"`
	Counts          countsJSON   `json:"counts"`
	Results         []resultJSON `json:"results,omitempty"`
}

func toRunJSON(r automation.Run) runJSON {
	out := runJSON{RunID: r.ID, Kind: r.Kind, Status: r.Status, AssemblyID: r.AssemblyID, AssemblyName: r.AssemblyName,
		AssemblyVersion: r.AssemblyVersion, Language: r.Language, RunAs: r.RunAs, RequestedBy: r.RequestedBy, Trigger: r.Trigger,
		ScheduledJobID: r.ScheduledJobID, TimeoutSeconds: r.TimeoutSeconds, CreatedAt: r.CreatedAt.UTC(),
		StartedAt: utcPtr(r.StartedAt), FinishedAt: utcPtr(r.FinishedAt),
		Counts: countsJSON{Pending: r.Counts.Pending, Running: r.Counts.Running, Succeeded: r.Counts.Succeeded,
			Failed: r.Counts.Failed, TimedOut: r.Counts.TimedOut, Skipped: r.Counts.Skipped}}
	if r.Results != nil {
		out.Results = make([]resultJSON, len(r.Results))
		for i, x := range r.Results {
			out.Results[i] = resultJSON{GUID: x.GUID, Hostname: x.Hostname, Status: x.Status, ExitCode: x.ExitCode,
				Stdout: x.Stdout, Stderr: x.Stderr, StdoutTruncated: x.StdoutTruncated, StderrTruncated: x.StderrTruncated,
				ErrorCode: x.ErrorCode, ErrorMessage: x.ErrorMessage, OperationID: x.OperationID, DurationMS: x.DurationMS,
				StartedAt: utcPtr(x.StartedAt), FinishedAt: utcPtr(x.FinishedAt), Ansible: x.Ansible}
		}
	}
	return out
}

// quickRunFilterDevices resolves a quick run's filter_id to the devices
// inside scope it matches now, refusing more than a run may take.
func (s *Server) quickRunFilterDevices(ctx context.Context, scope cairn.SiteScope, id int64, withDevices bool) ([]string, error) {
	if withDevices {
		return nil, cairn.Invalid("filter_id", "name devices or a device filter, not both")
	}
	guids, err := s.Jobs.FilterDevices(ctx, scope, id)
	if cairn.ErrorCode(err) == cairn.ECodeNotFound {
		return nil, cairn.Invalid("filter_id", fmt.Sprintf("no device filter %d", id))
	}
	if err != nil {
		return nil, err
	}
	switch {
	case len(guids) == 0:
		return nil, cairn.Invalid("filter_id", "the device filter matches no device")
	case len(guids) > automation.MaxTargets:
		return nil, cairn.Invalid("filter_id", fmt.Sprintf("the device filter matches %d devices; a quick run takes at most %d: narrow the filter",
			len(guids), automation.MaxTargets))
	}
	return guids, nil
}
