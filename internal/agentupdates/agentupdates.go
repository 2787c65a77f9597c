// Package agentupdates records agent updates (docs/api.md "Agent
// updates"): the operations operators request and agents report, their
// bounded event timelines, the agent_maintenance job history each one
// leaves, and the operator events. The AgentUpdate workflow drives an
// operator's update; agents drive the rest through their progress posts.
// No HTTP and no Temporal here.
package agentupdates

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/agentartifacts"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/events"
)

// Error codes.
const (
	// ECodeUpdateInProgress: the device already has an active update (409).
	ECodeUpdateInProgress = "update_in_progress"
)

// TypeProgressChanged is the operator event of an update's progress.
const TypeProgressChanged = "agent_update_progress_changed"

// Operation statuses.
const (
	StatusQueued     = "queued"
	StatusRunning    = "running"
	StatusSucceeded  = "succeeded"
	StatusFailed     = "failed"
	StatusRolledBack = "rolled_back"
	StatusTimedOut   = "timed_out"
)

// Reasons.
const (
	ReasonOperator = "operator"
	ReasonHourly   = "hourly"
)

// Bounds.
const (
	MaxEvents      = 100 // kept per operation, and per progress post
	MaxDevices     = 1000
	MaxHistory     = 100
	DefaultHistory = 20
	maxMessage     = 1000
	// hourlyDeadline ends an update the agent started itself (which has
	// no workflow watching it) that reported no outcome for this long,
	// so a device that died mid-update can be updated again.
	hourlyDeadline  = 15 * time.Minute
	maxOperationID  = 100
	activityKind    = "agent_update"
	activitySummary = 500
)

// Terminal reports whether status ends an operation.
func Terminal(status string) bool {
	return status != StatusQueued && status != StatusRunning
}

// Artifact is the current agent build for a platform (the artifact
// catalog's, adapted by the Engine's constructor).
type Artifact struct {
	ID, Platform, BuildID, SHA256 string
	Size                          int64
	Signature                     proto.Signed
	// ArtifactSignature is the artifact key's (nil: none yet).
	ArtifactSignature *proto.Signed
}

// Artifacts names the current artifact of a platform; an error carries
// artifact_unavailable.
type Artifacts interface {
	Current(ctx context.Context, platform string) (Artifact, error)
}

// Service is the agent update records.
type Service struct {
	store     *db.Store
	devices   *devices.Service
	bus       *events.Bus
	artifacts Artifacts
	log       *slog.Logger
}

// New builds the service; artifacts may be nil (every request answers
// artifact_unavailable).
func New(store *db.Store, devs *devices.Service, bus *events.Bus, artifacts Artifacts, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, devices: devs, bus: bus, artifacts: artifacts, log: log}
}

// DownloadPath is where an agent downloads an artifact.
func DownloadPath(artifactID string) string { return "/api/agent/update/download/" + artifactID }

// Planned is one requested update: what the workflow sends.
type Planned struct {
	OperationID cairn.OperationID
	Target      devices.OperationTarget
	Request     proto.AgentUpdateRequest
	Actor       string
	// RunID is the agent_maintenance run the update belongs to.
	RunID cairn.RunID
	// LaneHolder, when set, is the site-lane holder the update must hold
	// a slot under before it starts (SPEC "Limits": agent-maintenance
	// items take a slot while active). Every update of one request shares
	// it, so a request takes one slot per site; a scheduled job's fire
	// holds its slots itself and leaves this empty.
	LaneHolder string
}

// LaneHolder is the site-lane holder of an operator's update request.
func LaneHolder(runID cairn.RunID) string { return string("agent-maintenance:" + runID) }

// Requested is what a request created.
type Requested struct {
	RunID          cairn.RunID
	ScheduledJobID int64
	Updates        []Planned
}

// Request records an operator's update of each device to the current
// artifact of its platform (a repair when it already runs it): one
// agent_maintenance run with a result and an operation per device, all or
// nothing. Devices outside scope are not found; a device with an active
// update is update_in_progress; one whose agent reports no agent_update
// capability is agent_too_old.
func (s *Service) Request(ctx context.Context, scope cairn.SiteScope, actor string, guids []string) (Requested, error) {
	return s.RequestFor(ctx, scope, actor, guids, Job{})
}

// Job names the scheduled job a request's run belongs to: zero is the
// system "Agent maintenance" job with trigger manual; an operator's
// agent_maintenance scheduled job passes its ID and trigger (schedule,
// rerun).
type Job struct {
	ScheduledJobID int64
	Trigger        string
	// RunID, when set, is a scheduled job's fire: the run is made (or
	// found) under this ID and each device is requested on its own (see
	// requestRun).
	RunID cairn.RunID
	// ScheduledFor is the fire time of a schedule's fire (nil: a rerun).
	ScheduledFor *time.Time
}

// OperationIDFor is the operation of device guid in run runID: derived, so
// a fire's request retried finds the operation it made.
func OperationIDFor(runID cairn.RunID, guid cairn.DeviceGUID) cairn.OperationID {
	return cairn.OperationID(uuid.NewSHA1(uuid.NameSpaceURL, []byte("cairn:agent-update:"+string(runID)+":"+string(guid))).String())
}

// RequestFor is Request with the run recorded under job.
func (s *Service) RequestFor(ctx context.Context, scope cairn.SiteScope, actor string, guids []string, job Job) (Requested, error) {
	if job.RunID != "" {
		return s.requestRun(ctx, scope, actor, guids, job)
	}
	var out Requested
	type dev struct {
		target   devices.OperationTarget
		from     string
		platform string
		art      Artifact
	}
	var devs []dev
	for _, g := range guids {
		t, err := s.devices.OperationTargetByGUID(ctx, scope, cairn.DeviceGUID(g))
		if err != nil {
			return out, err
		}
		if err := t.Require(proto.CapAgentUpdate); err != nil {
			return out, err // agent_too_old, before anything is recorded
		}
		if err := s.expireStale(ctx, cairn.DeviceGUID(g)); err != nil {
			return out, err
		}
		row, err := s.store.AgentUpdateDeviceInScope(ctx, db.AgentUpdateDeviceInScopeParams{Guid: cairn.DeviceGUID(g), AllSites: scope.All, SiteIds: scope.SiteIDs})
		if err != nil {
			return out, db.NotFound(err, "device not found")
		}
		devs = append(devs, dev{target: t, from: row.AgentBuildID,
			platform: agentartifacts.PlatformOf(row.OsFamily, row.OsArch, row.OperatingSystem)})
	}
	// Every device is checked before any artifact is looked at, so a
	// request naming a device outside the scope is not_found whatever else.
	for i := range devs {
		if devs[i].platform == "" {
			return out, agentartifacts.Unavailable("%s has not reported its system yet, so its agent build is unknown", devs[i].target.Hostname)
		}
		art, err := s.current(ctx, devs[i].platform)
		if err != nil {
			return out, err
		}
		devs[i].art = art
	}
	out.RunID = cairn.RunID(uuid.Must(uuid.NewV7()).String())
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		jobID, trigger := job.ScheduledJobID, job.Trigger
		if jobID == 0 {
			var err error
			if jobID, err = q.AgentMaintenanceJobEnsure(ctx); err != nil {
				return err
			}
		}
		if trigger == "" {
			trigger = "manual"
		}
		out.ScheduledJobID = jobID
		if err := q.AgentUpdateRunInsert(ctx, db.AgentUpdateRunInsertParams{ID: out.RunID, ScheduledJobID: &jobID,
			Trigger: trigger, RequestedBy: actor, TargetCount: int32(len(devs))}); err != nil {
			return err
		}
		for _, d := range devs {
			opID := uuid.NewString()
			siteID := d.target.SiteID
			_, err := q.AgentUpdateOperationInsert(ctx, db.AgentUpdateOperationInsertParams{ID: cairn.OperationID(opID), DeviceGuid: d.target.GUID,
				Hostname: d.target.Hostname, SiteID: &siteID, Status: StatusQueued, Reason: ReasonOperator, Force: true,
				RequestedBy: actor, FromBuildID: d.from, ToBuildID: d.art.BuildID, ArtifactID: d.art.ID,
				RunID: &out.RunID, ScheduledJobID: &jobID})
			if err != nil {
				return inProgress(err, d.target.Hostname)
			}
			if err := q.AgentUpdateResultInsert(ctx, db.AgentUpdateResultInsertParams{RunID: out.RunID, DeviceGuid: d.target.GUID,
				Hostname: d.target.Hostname, SiteID: &siteID, OperationID: cairn.OperationID(opID)}); err != nil {
				return err
			}
			out.Updates = append(out.Updates, Planned{OperationID: cairn.OperationID(opID), Target: d.target, Actor: actor,
				RunID: out.RunID, LaneHolder: LaneHolder(out.RunID),
				Request: proto.AgentUpdateRequest{OperationID: opID, ArtifactID: d.art.ID, BuildID: d.art.BuildID,
					SHA256: d.art.SHA256, Size: d.art.Size, DownloadURL: DownloadPath(d.art.ID), Signature: d.art.Signature,
					ArtifactSignature: d.art.ArtifactSignature, Force: true}})
		}
		return nil
	})
	if err != nil {
		return Requested{}, err
	}
	return out, nil
}

func (s *Service) current(ctx context.Context, platform string) (Artifact, error) {
	if s.artifacts == nil {
		return Artifact{}, agentartifacts.Unavailable("this Engine serves no agent artifacts")
	}
	return s.artifacts.Current(ctx, platform)
}

// inProgress turns the one-active-update index's violation into its code.
func inProgress(err error, hostname string) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "23505" && pg.ConstraintName == "agent_update_operations_active_idx" {
		return cairn.Errorf(ECodeUpdateInProgress, "an agent update of %s is already in progress", hostname)
	}
	return err
}

// expireStale ends the device's active update when the agent started it
// itself and it has reported no outcome within hourlyDeadline.
func (s *Service) expireStale(ctx context.Context, guid cairn.DeviceGUID) error {
	op, err := s.store.AgentUpdateOperationActive(ctx, guid)
	if db.IsNoRows(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if op.Reason != ReasonHourly || time.Since(op.CreatedAt) < hourlyDeadline {
		return nil
	}
	_, err = s.Finish(ctx, string(op.ID), StatusTimedOut, fmt.Sprintf("the agent reported no outcome within %s", hourlyDeadline), "")
	return err
}

// Begin marks an operation running and opens its activity row; it is
// idempotent (a retried workflow task keeps the first row).
func (s *Service) Begin(ctx context.Context, opID cairn.OperationID) error {
	op, err := s.store.AgentUpdateOperationGet(ctx, opID)
	if err != nil {
		return db.NotFound(err, "agent update not found")
	}
	return s.begin(ctx, op)
}

// begin starts op as it was read. The agent may report the outcome at
// any moment, also between that read and the start (an agent that has
// the request from an earlier attempt answers at once): the outcome
// wins, so an ended operation's activity row is closed at once and its
// job result keeps the outcome.
func (s *Service) begin(ctx context.Context, op db.AgentUpdateOperation) error {
	if Terminal(op.Status) || op.ActivityID != nil {
		return nil
	}
	id, err := s.openActivity(ctx, op)
	if db.IsForeignKeyViolation(err) {
		// The device was purged after the read, its operations with it.
		return cairn.Errorf(cairn.ECodeNotFound, "agent update not found")
	}
	if err != nil {
		return err
	}
	started, err := s.store.AgentUpdateOperationStart(ctx, db.AgentUpdateOperationStartParams{ID: op.ID, ActivityID: &id})
	if errors.Is(err, pgx.ErrNoRows) {
		// Finish ran after the read; it saw no activity row to close.
		ended, err := s.store.AgentUpdateOperationGet(ctx, op.ID)
		if db.IsNoRows(err) {
			// The device was purged after the read, its operations with
			// it; the activity row just opened outlives the device.
			op.Status, op.FailureSummary = StatusFailed, "the device was purged"
			if cerr := s.closeActivity(ctx, op, id); cerr != nil {
				return cerr
			}
			return db.NotFound(err, "agent update not found")
		}
		if err != nil {
			return err
		}
		return s.closeActivity(ctx, ended, id)
	}
	if err != nil {
		return err
	}
	if started.RunID != nil {
		if err := s.store.AgentUpdateResultStart(ctx, db.AgentUpdateResultStartParams{RunID: *started.RunID,
			DeviceGuid: started.DeviceGuid, ActivityID: &id}); err != nil {
			return err
		}
	}
	s.publish(ctx, started, started.Status, started.LastPhase)
	return nil
}

func (s *Service) openActivity(ctx context.Context, op db.AgentUpdateOperation) (int64, error) {
	summary := fmt.Sprintf("Update agent from %s to %s", orUnknown(op.FromBuildID), op.ToBuildID)
	if op.FromBuildID == op.ToBuildID {
		summary = "Repair agent (reinstall build " + op.ToBuildID + ")"
	}
	meta := map[string]any{"operation_id": op.ID, "reason": op.Reason, "from_build_id": op.FromBuildID, "to_build_id": op.ToBuildID}
	if op.RunID != nil {
		meta["run_id"] = *op.RunID
	}
	if op.ScheduledJobID != nil {
		meta["scheduled_job_id"] = *op.ScheduledJobID
	}
	a, err := s.devices.RecordActivity(ctx, devices.NewActivity{GUID: op.DeviceGuid, Hostname: op.Hostname, SiteID: deref(op.SiteID),
		Kind: activityKind, Summary: summary, Actor: op.RequestedBy, Status: devices.ActivityRunning, Metadata: meta})
	return a.ID, err
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown build"
	}
	return s
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

// Status is an operation's status now.
func (s *Service) Status(ctx context.Context, opID cairn.OperationID) (string, error) {
	op, err := s.store.AgentUpdateOperationGet(ctx, opID)
	if err != nil {
		return "", db.NotFound(err, "agent update not found")
	}
	return op.Status, nil
}

// Finish ends an active operation with status and summary, and closes its
// job result, run and activity row; an operation that already ended keeps
// its outcome. It returns the status the operation has.
func (s *Service) Finish(ctx context.Context, opID, status, summary, phase string) (string, error) {
	op, err := s.store.AgentUpdateOperationFinish(ctx, db.AgentUpdateOperationFinishParams{ID: cairn.OperationID(opID), Status: status,
		FailureSummary: bound(summary, maxMessage), Phase: phase})
	if errors.Is(err, pgx.ErrNoRows) {
		return s.Status(ctx, cairn.OperationID(opID))
	}
	if err != nil {
		return "", err
	}
	if op.RunID != nil {
		res, code := "succeeded", ""
		switch status {
		case StatusTimedOut:
			res, code = "timed_out", status
		case StatusFailed, StatusRolledBack:
			res, code = "failed", status
		}
		if err := s.store.AgentUpdateResultSet(ctx, db.AgentUpdateResultSetParams{RunID: *op.RunID, DeviceGuid: op.DeviceGuid,
			Status: res, ErrorCode: code, ErrorMessage: op.FailureSummary}); err != nil {
			return "", err
		}
		if err := s.store.AgentUpdateRunSettle(ctx, *op.RunID); err != nil {
			return "", err
		}
	}
	if op.ActivityID != nil {
		if err := s.closeActivity(ctx, op, *op.ActivityID); err != nil {
			return "", err
		}
	}
	s.publish(ctx, op, op.Status, op.LastPhase)
	return op.Status, nil
}

// closeActivity ends the activity row of the ended operation op.
func (s *Service) closeActivity(ctx context.Context, op db.AgentUpdateOperation, activityID int64) error {
	act, text := devices.ActivityCompleted, fmt.Sprintf("Agent updated to %s", op.ToBuildID)
	if op.FromBuildID == op.ToBuildID {
		text = "Agent repaired (build " + op.ToBuildID + ")"
	}
	if op.Status != StatusSucceeded {
		act, text = devices.ActivityFailed, fmt.Sprintf("Agent update to %s %s: %s", op.ToBuildID, strings.ReplaceAll(op.Status, "_", " "), op.FailureSummary)
	}
	meta := map[string]any{"operation_id": op.ID, "reason": op.Reason, "from_build_id": op.FromBuildID,
		"to_build_id": op.ToBuildID, "status": op.Status}
	if op.RunID != nil {
		meta["run_id"] = *op.RunID
	}
	if op.ScheduledJobID != nil {
		meta["scheduled_job_id"] = *op.ScheduledJobID
	}
	return s.devices.OperationFinished(ctx, activityID, act, bound(text, activitySummary), meta)
}

func bound(s string, n int) string {
	if len([]rune(s)) > n {
		return string([]rune(s)[:n])
	}
	return s
}

// publish tells consoles of the device's site; a failure is logged (the
// console polls too).
func (s *Service) publish(ctx context.Context, op db.AgentUpdateOperation, status, phase string) {
	data, _ := json.Marshal(map[string]string{"guid": string(op.DeviceGuid), "operation_id": string(op.ID), "status": status, "phase": phase})
	err := s.bus.Publish(ctx, events.Event{ID: uuid.NewString(), Type: TypeProgressChanged, SiteID: deref(op.SiteID), Data: data})
	if err != nil {
		s.log.WarnContext(ctx, "publish agent update progress", "operation", op.ID, "err", err)
	}
}

// Progress records an agent's progress post: its events (the newest
// MaxEvents kept), the phase, and the outcome a final phase gives. An
// update the agent started itself (the hourly check) is recorded here on
// its first post, with its job history. It returns the operation as it
// now stands.
func (s *Service) Progress(ctx context.Context, dev Device, p proto.UpdateProgress) (db.AgentUpdateOperation, error) {
	if err := validateProgress(p); err != nil {
		return db.AgentUpdateOperation{}, err
	}
	op, err := s.store.AgentUpdateOperationGetForDevice(ctx, db.AgentUpdateOperationGetForDeviceParams{ID: cairn.OperationID(p.OperationID), DeviceGuid: dev.GUID})
	if errors.Is(err, pgx.ErrNoRows) && p.ToBuildID != "" {
		if err := s.expireStale(ctx, dev.GUID); err != nil {
			return op, err
		}
		op, err = s.startHourly(ctx, dev, p)
	}
	if err != nil {
		return op, db.NotFound(err, "agent update not found")
	}
	arg := db.AgentUpdateEventsInsertParams{OperationID: string(op.ID)}
	for _, e := range p.Events {
		arg.Phases = append(arg.Phases, e.Phase)
		arg.Percents = append(arg.Percents, int32(e.Percent))
		arg.Messages = append(arg.Messages, bound(e.Message, maxMessage))
		arg.Captured = append(arg.Captured, e.CapturedAt.UTC())
	}
	if err := s.store.AgentUpdateEventsInsert(ctx, arg); err != nil {
		return op, err
	}
	if err := s.store.AgentUpdateEventsTrim(ctx, op.ID); err != nil {
		return op, err
	}
	last := p.Events[len(p.Events)-1]
	if op, err = s.store.AgentUpdateOperationPhase(ctx, db.AgentUpdateOperationPhaseParams{ID: op.ID, Phase: last.Phase}); err != nil {
		return op, err
	}
	status, summary := "", ""
	for _, e := range p.Events {
		switch e.Phase {
		case proto.UpdateCompleted:
			status = StatusSucceeded
			if p.BuildID != op.ToBuildID {
				status, summary = StatusFailed, fmt.Sprintf("the agent finished on build %s, not %s", p.BuildID, op.ToBuildID)
			}
		case proto.UpdateFailed:
			status, summary = StatusFailed, e.Message
		case proto.UpdateRolledBack:
			status, summary = StatusRolledBack, e.Message
		}
	}
	if status != "" && !Terminal(op.Status) {
		if _, err := s.Finish(ctx, string(op.ID), status, summary, last.Phase); err != nil {
			return op, err
		}
		return s.store.AgentUpdateOperationGet(ctx, op.ID)
	}
	s.publish(ctx, op, op.Status, op.LastPhase)
	return op, nil
}

// Device is the agent posting progress.
type Device struct {
	GUID     cairn.DeviceGUID
	Hostname string
	SiteID   cairn.SiteID
}

func validateProgress(p proto.UpdateProgress) error {
	var v cairn.Validation
	if p.OperationID == "" || len(p.OperationID) > maxOperationID {
		v.Add("operation_id", fmt.Sprintf("is required, at most %d characters", maxOperationID))
	}
	if len(p.Events) == 0 || len(p.Events) > MaxEvents {
		v.Add("events", fmt.Sprintf("must hold 1 to %d events", MaxEvents))
	}
	for i, e := range p.Events {
		f := fmt.Sprintf("events[%d]", i)
		switch {
		case !slices.Contains(proto.UpdatePhases, e.Phase):
			v.Add(f+".phase", "must be one of "+strings.Join(proto.UpdatePhases, ", "))
		case e.Percent < 0 || e.Percent > 100:
			v.Add(f+".percent", "must be 0 to 100")
		case e.CapturedAt.IsZero():
			v.Add(f+".captured_at", "is required")
		}
	}
	if len(p.BuildID) > 200 || len(p.ToBuildID) > 200 || len(p.ArtifactID) > 200 {
		v.Add("build_id", "build and artifact IDs are at most 200 characters")
	}
	return v.Err()
}

// startHourly records an update an agent started itself after its hourly
// check found another build: the operation and its job history.
func (s *Service) startHourly(ctx context.Context, dev Device, p proto.UpdateProgress) (db.AgentUpdateOperation, error) {
	var op db.AgentUpdateOperation
	runID := uuid.Must(uuid.NewV7()).String()
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		jobID, err := q.AgentMaintenanceJobEnsure(ctx)
		if err != nil {
			return err
		}
		if err := q.AgentUpdateRunInsert(ctx, db.AgentUpdateRunInsertParams{ID: cairn.RunID(runID), ScheduledJobID: &jobID,
			Trigger: ReasonHourly, RequestedBy: "", TargetCount: 1}); err != nil {
			return err
		}
		siteID := dev.SiteID
		op, err = q.AgentUpdateOperationInsert(ctx, db.AgentUpdateOperationInsertParams{ID: cairn.OperationID(p.OperationID), DeviceGuid: dev.GUID,
			Hostname: dev.Hostname, SiteID: &siteID, Status: StatusRunning, Reason: ReasonHourly, FromBuildID: p.BuildID,
			ToBuildID: p.ToBuildID, ArtifactID: p.ArtifactID, RunID: (*cairn.RunID)(&runID), ScheduledJobID: &jobID})
		if err != nil {
			return inProgress(err, dev.Hostname)
		}
		return q.AgentUpdateResultInsert(ctx, db.AgentUpdateResultInsertParams{RunID: cairn.RunID(runID), DeviceGuid: dev.GUID,
			Hostname: dev.Hostname, SiteID: &siteID, OperationID: cairn.OperationID(p.OperationID)})
	})
	if err != nil {
		return op, err
	}
	if err := s.Begin(ctx, op.ID); err != nil {
		return op, err
	}
	return s.store.AgentUpdateOperationGet(ctx, op.ID)
}
