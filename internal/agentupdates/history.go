package agentupdates

import (
	"context"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// Operation is one update as GET /api/devices/<guid>/agent-updates shows it.
type Operation struct {
	OperationID    cairn.OperationID `json:"operation_id"`
	Status         string            `json:"status"`
	Reason         string            `json:"reason"`
	RequestedBy    string            `json:"requested_by"`
	FromBuildID    string            `json:"from_build_id"`
	ToBuildID      string            `json:"to_build_id"`
	ArtifactID     string            `json:"artifact_id"`
	RunID          *cairn.RunID      `json:"run_id"`
	ScheduledJobID *int64            `json:"scheduled_job_id"`
	Phase          string            `json:"phase"`
	FailureSummary string            `json:"failure_summary"`
	CreatedAt      time.Time         `json:"created_at"`
	StartedAt      *time.Time        `json:"started_at"`
	FinishedAt     *time.Time        `json:"finished_at"`
	Events         []Event           `json:"events"`
}

// Event is one entry of an operation's timeline.
type Event struct {
	Phase      string    `json:"phase"`
	Percent    int       `json:"percent"`
	Message    string    `json:"message"`
	CapturedAt time.Time `json:"captured_at"`
	ReceivedAt time.Time `json:"received_at"`
}

// History is a device's active update and its newest updates.
type History struct {
	Active  *Operation  `json:"active"`
	History []Operation `json:"history"`
}

// History returns the device's active update (nil when none) and its
// newest limit updates (or only operationID's, when given), inside scope.
func (s *Service) History(ctx context.Context, scope cairn.SiteScope, guid cairn.DeviceGUID, operationID cairn.OperationID, limit int) (History, error) {
	out := History{History: []Operation{}}
	if _, err := s.store.AgentUpdateDeviceInScope(ctx, db.AgentUpdateDeviceInScopeParams{Guid: guid, AllSites: scope.All, SiteIds: scope.SiteIDs}); err != nil {
		return out, db.NotFound(err, "device not found")
	}
	rows, err := s.store.AgentUpdateOperationsByDevice(ctx, db.AgentUpdateOperationsByDeviceParams{DeviceGuid: guid,
		OperationID: string(operationID), MaxRows: int32(limit)})
	if err != nil {
		return out, err
	}
	if operationID != "" && len(rows) == 0 {
		return out, cairn.Errorf(cairn.ECodeNotFound, "agent update not found")
	}
	active, err := s.store.AgentUpdateOperationActive(ctx, guid)
	hasActive := err == nil
	if err != nil && !db.IsNoRows(err) {
		return out, err
	}
	ids := make([]string, 0, len(rows)+1)
	for _, r := range rows {
		ids = append(ids, string(r.ID))
	}
	if hasActive {
		ids = append(ids, string(active.ID))
	}
	evs, err := s.store.AgentUpdateEventsList(ctx, ids)
	if err != nil {
		return out, err
	}
	byOp := map[string][]Event{}
	for _, e := range evs {
		byOp[string(e.OperationID)] = append(byOp[string(e.OperationID)], Event{Phase: e.Phase, Percent: int(e.Percent), Message: e.Message,
			CapturedAt: e.CapturedAt.UTC(), ReceivedAt: e.ReceivedAt.UTC()})
	}
	for _, r := range rows {
		out.History = append(out.History, operation(r, byOp[string(r.ID)]))
	}
	if hasActive {
		a := operation(active, byOp[string(active.ID)])
		out.Active = &a
	}
	return out, nil
}

func operation(r db.AgentUpdateOperation, evs []Event) Operation {
	if evs == nil {
		evs = []Event{}
	}
	return Operation{OperationID: r.ID, Status: r.Status, Reason: r.Reason, RequestedBy: r.RequestedBy, FromBuildID: r.FromBuildID,
		ToBuildID: r.ToBuildID, ArtifactID: r.ArtifactID, RunID: (*cairn.RunID)((*string)(r.RunID)), ScheduledJobID: r.ScheduledJobID, Phase: r.LastPhase,
		FailureSummary: r.FailureSummary, CreatedAt: r.CreatedAt.UTC(), StartedAt: utc(r.StartedAt), FinishedAt: utc(r.FinishedAt), Events: evs}
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
