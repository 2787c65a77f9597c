package devices

import (
	"context"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// OperationAccepted records an operation as running before it is started,
// so that its status can be read (OperationByID) from the moment its ID
// is handed out. The workflow that runs it records the same row again
// (OperationStarted, keyed by the operation ID), which is when the
// operation counts as started in the metrics.
func (s *Service) OperationAccepted(ctx context.Context, t OperationTarget, operationID cairn.OperationID, kind, summary, actor string, meta map[string]any) (int64, error) {
	a, err := s.recordActivity(ctx, s.store.Queries, NewActivity{GUID: t.GUID, Hostname: t.Hostname, SiteID: t.SiteID, Kind: kind,
		Summary: summary, Actor: actor, Status: ActivityRunning, Metadata: meta, OperationID: operationID})
	return a.ID, err
}

// OperationByID is an operation's activity row inside scope: not_found
// for an unknown operation and for one on a device of another site.
func (s *Service) OperationByID(ctx context.Context, scope cairn.SiteScope, id cairn.OperationID) (Activity, error) {
	row, err := s.store.DeviceActivityGetByOperation(ctx, db.DeviceActivityGetByOperationParams{OperationID: string(id),
		AllSites: scope.All, SiteIds: scope.IDs()})
	if err != nil {
		return Activity{}, db.NotFound(err, "operation not found")
	}
	return activity(row), nil
}
