package agentupdates

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/agentartifacts"
)

// Result codes of a scheduled request's devices that get no update.
const (
	resultSkipped = "skipped"
	resultFailed  = "failed"
)

// requestRun is the request of an agent_maintenance scheduled job's fire:
// unlike an operator's request it is not all or nothing. Each device gets
// a result in run job.RunID: an update operation (ID OperationIDFor), or
// skipped with update_in_progress when it already has an active update,
// or failed with artifact_unavailable when no artifact fits it. It is
// idempotent per (run, device): retried, it records nothing twice and
// returns the run's updates that have not ended, so their workflows can
// be started (again; the start refuses a duplicate).
func (s *Service) requestRun(ctx context.Context, scope cairn.SiteScope, actor string, guids []string, job Job) (Requested, error) {
	out := Requested{RunID: job.RunID, ScheduledJobID: job.ScheduledJobID}
	trigger := job.Trigger
	if trigger == "" {
		trigger = "schedule"
	}
	jobID := job.ScheduledJobID
	err := s.store.AgentUpdateRunInsert(ctx, db.AgentUpdateRunInsertParams{ID: job.RunID, ScheduledJobID: &jobID,
		Trigger: trigger, RequestedBy: actor, TargetCount: int32(len(guids)), ScheduledFor: job.ScheduledFor})
	if err != nil && !isDuplicate(err) {
		return out, err
	}
	for _, g := range guids {
		p, ok, err := s.requestDevice(ctx, scope, actor, g, job)
		if err != nil {
			return out, err
		}
		if ok {
			out.Updates = append(out.Updates, p)
		}
	}
	return out, s.store.AgentUpdateRunSettle(ctx, job.RunID)
}

// requestDevice records device g's part of a scheduled request; ok says
// an update is (still) to be started.
func (s *Service) requestDevice(ctx context.Context, scope cairn.SiteScope, actor, g string, job Job) (Planned, bool, error) {
	opID := OperationIDFor(cairn.RunID(string(job.RunID)), cairn.DeviceGUID(g))
	t, err := s.devices.OperationTargetByGUID(ctx, scope, cairn.DeviceGUID(g))
	if cairn.ErrorCode(err) == cairn.ECodeNotFound {
		return Planned{}, false, nil // purged since the fire resolved it
	}
	if err != nil {
		return Planned{}, false, err
	}
	if err := s.expireStale(ctx, cairn.DeviceGUID(g)); err != nil {
		return Planned{}, false, err
	}
	row, err := s.store.AgentUpdateDeviceInScope(ctx, db.AgentUpdateDeviceInScopeParams{Guid: cairn.DeviceGUID(g), AllSites: scope.All, SiteIds: scope.SiteIDs})
	if db.IsNoRows(err) {
		return Planned{}, false, nil
	}
	if err != nil {
		return Planned{}, false, err
	}
	siteID := t.SiteID
	// outcome records a device that gets no update; a retry finds its
	// result and records nothing again.
	outcome := func(status string, cause error) (Planned, bool, error) {
		err := s.store.InTx(ctx, func(q *db.Queries) error {
			if err := q.AgentUpdateResultInsert(ctx, db.AgentUpdateResultInsertParams{RunID: job.RunID, DeviceGuid: cairn.DeviceGUID(g),
				Hostname: t.Hostname, SiteID: &siteID}); err != nil {
				return err
			}
			return q.AgentUpdateResultSet(ctx, db.AgentUpdateResultSetParams{RunID: job.RunID, DeviceGuid: cairn.DeviceGUID(g), Status: status,
				ErrorCode: cairn.ErrorCode(cause), ErrorMessage: bound(message(cause), maxMessage)})
		})
		if isDuplicate(err) {
			err = nil
		}
		return Planned{}, false, err
	}
	if err := t.Require(proto.CapAgentUpdate); err != nil {
		return outcome(resultFailed, err) // agent_too_old: nothing is sent
	}
	platform := agentartifacts.PlatformOf(row.OsFamily, row.OsArch, row.OperatingSystem)
	if platform == "" {
		return outcome(resultFailed, agentartifacts.Unavailable("%s has not reported its system yet, so its agent build is unknown", t.Hostname))
	}
	art, err := s.current(ctx, platform)
	if cairn.ErrorCode(err) == agentartifacts.ECodeUnavailable {
		return outcome(resultFailed, err)
	}
	if err != nil {
		return Planned{}, false, err
	}
	plan := Planned{OperationID: opID, Target: t, Actor: actor, Request: s.request(opID, art)}
	if op, err := s.store.AgentUpdateOperationGet(ctx, opID); err == nil {
		// Requested by an earlier try of this fire: start it unless it
		// ended or the artifact moved on since (then it ends here).
		if Terminal(op.Status) {
			return Planned{}, false, nil
		}
		if op.ArtifactID != art.ID {
			_, err := s.Finish(ctx, string(opID), StatusFailed, "the agent artifact changed before the update started", "")
			return Planned{}, false, err
		}
		return plan, true, nil
	} else if !db.IsNoRows(err) {
		return Planned{}, false, err
	}
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		_, err := q.AgentUpdateOperationInsert(ctx, db.AgentUpdateOperationInsertParams{ID: opID, DeviceGuid: cairn.DeviceGUID(g),
			Hostname: t.Hostname, SiteID: &siteID, Status: StatusQueued, Reason: ReasonOperator, Force: true,
			RequestedBy: actor, FromBuildID: row.AgentBuildID, ToBuildID: art.BuildID, ArtifactID: art.ID,
			RunID: &job.RunID, ScheduledJobID: &job.ScheduledJobID})
		if err != nil {
			return inProgress(err, t.Hostname)
		}
		return q.AgentUpdateResultInsert(ctx, db.AgentUpdateResultInsertParams{RunID: job.RunID, DeviceGuid: cairn.DeviceGUID(g),
			Hostname: t.Hostname, SiteID: &siteID, OperationID: opID})
	})
	switch {
	case cairn.ErrorCode(err) == ECodeUpdateInProgress:
		return outcome(resultSkipped, err)
	case isDuplicate(err):
		return Planned{}, false, nil // this run already has the device's result
	case err != nil:
		return Planned{}, false, err
	}
	return plan, true, nil
}

// message is a domain error's client message.
func message(err error) string {
	var e *cairn.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// isDuplicate reports a unique violation other than the one-active-update
// index (a row this request already made).
func isDuplicate(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "23505" && pg.ConstraintName != "agent_update_operations_active_idx"
}

// request is the wire request of operation opID to artifact art.
func (s *Service) request(opID cairn.OperationID, art Artifact) proto.AgentUpdateRequest {
	return proto.AgentUpdateRequest{OperationID: string(opID), ArtifactID: art.ID, BuildID: art.BuildID, SHA256: art.SHA256,
		Size: art.Size, DownloadURL: DownloadPath(art.ID), Signature: art.Signature, ArtifactSignature: art.ArtifactSignature,
		Force: true}
}
