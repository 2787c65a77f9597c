package patches

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// Patch install jobs: scheduled jobs of kind patch_install (SPEC "job
// kinds"). A device's install action opens a draft of one (Draft) that
// the operator reviews and saves through the scheduled job routes; a
// policy evaluation creates immediate ones. Whoever fires it, a run
// records its installs once (CreateRun, keyed by the run ID) and its fire
// hands them to the devices' patch lanes while it holds a slot of each
// target site's scheduled lane, like other scheduled work.
const (
	// JobKind is the scheduled job kind.
	JobKind = "patch_install"
	// ParamPatchKeys is the job parameter naming the patch keys to
	// install on each target device that has them pending.
	ParamPatchKeys = "patch_keys"
	// MaxJobPatchKeys bounds one job's patch keys.
	MaxJobPatchKeys = 200
	// TriggerPolicy is the trigger of an evaluation's run.
	TriggerPolicy = "policy"
)

// JobPatchKeys reads a patch_install job's patch_keys parameter
// (field names the field for validation errors).
func JobPatchKeys(params map[string]any, v *cairn.Validation, field string) []string {
	raw, ok := params[ParamPatchKeys]
	if !ok {
		v.Add(field, "is required for a patch_install job: the patch keys to install")
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		if ss, isStrings := raw.([]string); isStrings {
			for _, s := range ss {
				list = append(list, s)
			}
		} else {
			v.Add(field, "must be a list of patch keys")
			return nil
		}
	}
	var out []string
	for _, x := range list {
		s, ok := x.(string)
		if !ok || strings.TrimSpace(s) == "" {
			v.Add(field, "must be a list of patch keys (non-empty strings)")
			return nil
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	switch {
	case len(out) == 0:
		v.Add(field, "name at least one patch key")
	case len(out) > MaxJobPatchKeys:
		v.Add(field, fmt.Sprintf("at most %d patch keys", MaxJobPatchKeys))
	}
	return out
}

// CheckJobKeys validates a patch_install job's patch keys against its
// target devices: each key must be pending on at least one of them (a
// key pending nowhere installs nothing). It returns the normalised keys.
func (s *Service) CheckJobKeys(ctx context.Context, guids []string, params map[string]any, v *cairn.Validation) ([]string, error) {
	field := "parameters." + ParamPatchKeys
	keys := JobPatchKeys(params, v, field)
	if len(keys) == 0 || len(guids) == 0 {
		return keys, nil
	}
	rows, err := s.store.PatchPendingKeys(ctx, guids)
	if err != nil {
		return nil, err
	}
	pending := map[string]bool{}
	for _, r := range rows {
		pending[r.PatchKey] = true
	}
	for _, k := range keys {
		if !pending[k] {
			v.Add(field, fmt.Sprintf("%q is not pending on any target device", k))
			break
		}
	}
	return keys, nil
}

// Draft is a patch_install scheduled job to review and save (POST
// /api/scheduled_jobs): nothing is stored until the operator schedules
// it.
type Draft struct {
	JobKind    string         `json:"job_kind"`
	Name       string         `json:"name"`
	Kind       string         `json:"kind"`
	Parameters map[string]any `json:"parameters"`
	Targets    DraftTargets   `json:"targets"`
	Schedule   DraftSchedule  `json:"schedule"`
	Options    DraftOptions   `json:"options"`
	Enabled    bool           `json:"enabled"`
	// Patches are the pending rows the draft installs.
	Patches []Row `json:"patches"`
}

// DraftTargets are a draft's targets (the scheduled job shape).
type DraftTargets struct {
	Devices []string `json:"devices"`
	Sites   []int64  `json:"sites"`
	Filters []int64  `json:"filters"`
}

// DraftSchedule is a draft's schedule: once, at a time the operator
// reviews (the scheduled job shape).
type DraftSchedule struct {
	Type string    `json:"type"`
	At   time.Time `json:"at"`
}

// DraftOptions are a draft's options (the scheduled job shape).
type DraftOptions struct {
	RunWhenOnline      bool `json:"run_when_online"`
	TimeoutSeconds     int  `json:"timeout_seconds"`
	StopOnFirstFailure bool `json:"stop_on_first_failure"`
}

// DraftLead is how far ahead a draft's proposed run time is.
const DraftLead = 5 * time.Minute

// InstallDraft opens a patch_install job draft for a device's pending
// rows keys (all its pending rows when keys is empty).
func (s *Service) InstallDraft(ctx context.Context, scope cairn.SiteScope, hostname string, keys []string) (Draft, error) {
	view, err := s.Device(ctx, scope, hostname)
	if err != nil {
		return Draft{}, err
	}
	pending := map[string]Row{}
	var order []string
	for _, p := range view.Patches {
		if p.State == "pending" {
			pending[p.PatchKey] = p
			order = append(order, p.PatchKey)
		}
	}
	var v cairn.Validation
	var chosen []Row
	if len(keys) == 0 {
		for _, k := range order {
			chosen = append(chosen, pending[k])
		}
		if len(chosen) == 0 {
			v.Add("patch_keys", "the device has no pending patch")
		}
	} else {
		if len(keys) > MaxJobPatchKeys {
			v.Add("patch_keys", fmt.Sprintf("at most %d patch keys", MaxJobPatchKeys))
		}
		seen := map[string]bool{}
		for _, k := range keys {
			row, ok := pending[k]
			if !ok {
				v.Add("patch_keys", fmt.Sprintf("%q is not pending on %s", k, view.Hostname))
				break
			}
			if !seen[k] {
				seen[k] = true
				chosen = append(chosen, row)
			}
		}
	}
	if err := v.Err(); err != nil {
		return Draft{}, err
	}
	names := make([]string, len(chosen))
	patchKeys := make([]string, len(chosen))
	for i, r := range chosen {
		names[i], patchKeys[i] = r.Title, r.PatchKey
	}
	name := "Install " + strings.Join(names, ", ")
	if len(chosen) > 1 {
		name = fmt.Sprintf("Install %d patches", len(chosen))
	}
	name += " on " + view.Hostname
	if r := []rune(name); len(r) > 200 {
		name = string(r[:200])
	}
	return Draft{JobKind: JobKind, Kind: JobKind, Name: name, Parameters: map[string]any{ParamPatchKeys: patchKeys},
		Targets:  DraftTargets{Devices: []string{string(view.GUID)}, Sites: []int64{}, Filters: []int64{}},
		Schedule: DraftSchedule{Type: "once", At: s.now().UTC().Add(DraftLead).Truncate(time.Minute)},
		Enabled:  true, Patches: chosen}, nil
}

// RunTarget is one device of a run.
type RunTarget struct {
	GUID     cairn.DeviceGUID
	Hostname string
	SiteID   cairn.SiteID
	SiteSlug string
}

// RunRequest is one run of a patch_install job.
type RunRequest struct {
	RunID        cairn.RunID
	JobID        int64
	Trigger      string
	Actor        string
	ScheduledFor *time.Time
	Targets      []RunTarget
	// PatchKeys are installed on each target that has them pending.
	PatchKeys []string
}

// CreateRun records a run of a patch_install job once per run ID: the
// run, each target's result and an install of each of the job's keys
// pending on it. A run already recorded is left as it is (false): a fire
// retried, restarted or started twice never asks for an install twice.
// An install of the same patch already open (another run's) is not asked
// for again.
func (s *Service) CreateRun(ctx context.Context, req RunRequest) (bool, error) {
	created := false
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		var err error
		created, _, err = s.createRun(ctx, q, req)
		return err
	})
	return created, err
}

// createRun is CreateRun inside a transaction; it returns the installs it
// created.
func (s *Service) createRun(ctx context.Context, q *db.Queries, req RunRequest) (bool, []Install, error) {
	jobID := req.JobID
	n, err := q.PatchRunInsert(ctx, db.PatchRunInsertParams{ID: req.RunID, ScheduledJobID: &jobID, Trigger: req.Trigger,
		RequestedBy: req.Actor, TargetCount: int32(len(req.Targets)), ScheduledFor: req.ScheduledFor})
	if err != nil || n == 0 {
		return false, nil, err
	}
	guids := make([]string, len(req.Targets))
	for i, t := range req.Targets {
		guids[i] = string(t.GUID)
	}
	rows, err := q.PatchPendingKeys(ctx, guids)
	if err != nil {
		return false, nil, err
	}
	pending := map[cairn.DeviceGUID]map[string]bool{}
	for _, r := range rows {
		if pending[r.DeviceGuid] == nil {
			pending[r.DeviceGuid] = map[string]bool{}
		}
		pending[r.DeviceGuid][r.PatchKey] = true
	}
	var made []Install
	for _, t := range req.Targets {
		status, msg := "running", ""
		var mine, others int
		for _, k := range req.PatchKeys {
			if !pending[t.GUID][k] {
				continue
			}
			inst, created, err := insertInstall(ctx, q, t.GUID, k, req)
			if err != nil {
				return false, nil, err
			}
			if created {
				mine++
				made = append(made, inst)
			} else {
				others++
			}
		}
		switch {
		case mine == 0 && others == 0:
			status, msg = "skipped", "none of the job's patches is pending on this device"
		case mine == 0:
			status, msg = "skipped", "its patches are being installed by an earlier request"
		}
		site := t.SiteID
		if err := q.PatchRunResultInsert(ctx, db.PatchRunResultInsertParams{RunID: req.RunID, DeviceGuid: t.GUID, Hostname: t.Hostname,
			SiteID: &site, Status: status, ErrorMessage: msg}); err != nil {
			return false, nil, err
		}
	}
	return true, made, nil
}

// insertInstall records one install of a run (false: the open install of
// the same patch, from before).
func insertInstall(ctx context.Context, q *db.Queries, guid cairn.DeviceGUID, key string, req RunRequest) (Install, bool, error) {
	p, err := q.PatchDeviceTarget(ctx, db.PatchDeviceTargetParams{DeviceGuid: guid, PatchKey: key, AllSites: true, SiteIds: []int64{}})
	if err != nil {
		return Install{}, false, err
	}
	id := newInstallID()
	jobID := req.JobID
	row, err := q.PatchInstallInsert(ctx, db.PatchInstallInsertParams{ID: id, DeviceGuid: p.Guid,
		PatchKey: p.PatchKey, Kb: p.Kb, UpdateID: p.UpdateID, Revision: p.Revision, Package: p.Package, Version: p.CandidateVersion,
		Title: p.Title, ScheduledJobID: &jobID, RunID: string(req.RunID), RequestedBy: req.Actor})
	if err != nil {
		return Install{}, false, err
	}
	return installOf(row), row.ID == id, nil
}

// RunQueue is what a run hands to its devices' lanes: each device's
// installs still queued, then the reboot the run asks for after them.
// Handing one twice is harmless: a lane skips an order that is no longer
// open.
func (s *Service) RunQueue(ctx context.Context, runID cairn.RunID) ([]Queued, error) {
	installs, err := s.store.PatchInstallListByRun(ctx, string(runID))
	if err != nil {
		return nil, err
	}
	reboots, err := s.store.PatchRebootListByRun(ctx, string(runID))
	if err != nil {
		return nil, err
	}
	var out []Queued
	for _, r := range installs {
		if r.PatchInstall.State != StateQueued {
			continue
		}
		out = append(out, Queued{Install: installOf(r.PatchInstall),
			Target: Target{GUID: r.PatchInstall.DeviceGuid, Hostname: r.Hostname, SiteSlug: r.SiteSlug}})
	}
	for _, r := range reboots {
		if r.PatchReboot.State != RebootQueued {
			continue
		}
		rb := rebootOf(r.PatchReboot)
		out = append(out, Queued{Reboot: &rb, Target: Target{GUID: r.PatchReboot.DeviceGuid, Hostname: r.Hostname, SiteSlug: r.SiteSlug}})
	}
	// Per device, installs before the reboot (stable: installs came first).
	sort.SliceStable(out, func(i, j int) bool { return out[i].Target.GUID < out[j].Target.GUID })
	return out, nil
}

// SettleRun records each device's part of a run whose installs all ended
// (succeeded when each is installed, confirmed by the re-scan, or already
// installed) and the run once every part has; it returns how many of the
// run's installs are still open.
func (s *Service) SettleRun(ctx context.Context, runID cairn.RunID) (int, error) {
	open := 0
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		n, err := q.PatchRunOpenCount(ctx, string(runID))
		if err != nil {
			return err
		}
		open = int(n)
		if err := q.PatchRunResultSettle(ctx, runID); err != nil {
			return err
		}
		return q.PatchRunSettle(ctx, runID)
	})
	return open, err
}

// AbandonRun finishes a run's open installs and reboots as failed when
// its fire could not be started, then settles it: the next evaluation
// asks for them afresh.
func (s *Service) AbandonRun(ctx context.Context, runID cairn.RunID, cause error) error {
	queued, err := s.RunQueue(ctx, runID)
	if err != nil {
		return err
	}
	if err := s.Abandon(ctx, queued, cause); err != nil {
		return err
	}
	_, err = s.SettleRun(ctx, runID)
	return err
}

// JobStart is a patch_install job run to fire now.
type JobStart struct {
	JobID int64       `json:"scheduled_job_id"`
	RunID cairn.RunID `json:"run_id"`
	// DeviceCount and InstallCount are what the run covers.
	DeviceCount  int `json:"device_count"`
	InstallCount int `json:"install_count"`
}

// evaluationGroup is the devices of one evaluation with the same approved
// keys: one immediate job each.
type evaluationGroup struct {
	keys    []string
	targets []RunTarget
	// reboots are the reboots after each device's installs.
	reboots map[cairn.DeviceGUID]RebootRequest
}

var errNothingNew = errors.New("nothing new to install")

// createEvaluationJob records an immediate patch_install job for a group
// with its run, installs and reboots; ok is false when every install was
// open already (then nothing is kept).
func (s *Service) createEvaluationJob(ctx context.Context, g evaluationGroup, actor string, runID cairn.RunID) (JobStart, []Install, []Reboot, error) {
	var start JobStart
	var made []Install
	var reboots []Reboot
	params, _ := json.Marshal(map[string]any{ParamPatchKeys: g.keys})
	guids := make([]string, len(g.targets))
	for i, t := range g.targets {
		guids[i] = string(t.GUID)
	}
	targets, _ := json.Marshal(map[string]any{"devices": guids, "sites": []int64{}, "filters": []int64{}})
	name := fmt.Sprintf("Patch policy installs: %d patches on %d devices", len(g.keys), len(g.targets))
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		id, err := q.PatchInstallJobInsert(ctx, db.PatchInstallJobInsertParams{Name: name, Parameters: params, Targets: targets, Actor: actor})
		if err != nil {
			return err
		}
		_, made, err = s.createRun(ctx, q, RunRequest{RunID: runID, JobID: id, Trigger: TriggerPolicy, Actor: actor,
			Targets: g.targets, PatchKeys: g.keys})
		if err != nil {
			return err
		}
		if len(made) == 0 {
			return errNothingNew
		}
		with := map[cairn.DeviceGUID]bool{}
		for _, i := range made {
			with[i.DeviceGUID] = true
		}
		for guid, rr := range g.reboots {
			if !with[guid] {
				continue
			}
			rr.RunID = string(runID)
			rb, err := requestReboot(ctx, q, rr)
			if err != nil {
				return err
			}
			reboots = append(reboots, rb)
		}
		start = JobStart{JobID: id, RunID: runID, DeviceCount: len(with), InstallCount: len(made)}
		return nil
	})
	if errors.Is(err, errNothingNew) {
		return JobStart{}, nil, nil, nil
	}
	return start, made, reboots, err
}
