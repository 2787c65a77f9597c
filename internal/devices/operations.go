package devices

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// The device side of remote operations: who may be acted on, what an
// agent's answer changes in the stored inventory, and the activity row
// each operation leaves. Sending and waiting is the command path's
// (activities.AgentCommands); this file has no Temporal in it.

// OperationTarget is a device an operator may act on.
type OperationTarget struct {
	GUID     cairn.DeviceGUID
	Hostname string
	SiteID   cairn.SiteID
	SiteSlug string
	// SocketLive says whether some process holds the agent's socket now.
	SocketLive bool
	// InventoryAt is when the stored inventory was collected (nil: never);
	// HasProcesses whether it holds a process list.
	InventoryAt  *time.Time
	HasProcesses bool
	// Capabilities are what the agent can be asked to do (Require checks
	// one). Routes check them before starting anything, so they are not
	// part of a workflow's input.
	Capabilities AgentCapabilities `json:"-"`
}

// Require answers nil when the target's agent has capability c, else
// agent_too_old (or unsupported_platform) before anything is started.
func (t OperationTarget) Require(c proto.Capability) error {
	if err := t.Capabilities.Require(t.Hostname, c); err != nil {
		return err
	}
	return nil
}

// OperationTarget returns the device named hostname inside scope when it
// may receive a new operation: quarantined and revoked devices answer
// device_quarantined or device_revoked (409), and nothing is sent.
func (s *Service) OperationTarget(ctx context.Context, scope cairn.SiteScope, hostname string) (OperationTarget, error) {
	if err := CheckHostname("hostname", hostname); err != nil {
		return OperationTarget{}, err
	}
	row, err := s.store.DeviceOperationTarget(ctx, db.DeviceOperationTargetParams{Hostname: hostname,
		FreshSeconds: SocketWindow.Seconds(), AllSites: scope.All, SiteIds: scope.SiteIDs})
	if err != nil {
		return OperationTarget{}, notFound(err)
	}
	if err := operable(row.Hostname, row.TrustState); err != nil {
		return OperationTarget{}, err
	}
	return OperationTarget{GUID: row.Guid, Hostname: row.Hostname, SiteID: row.SiteID, SiteSlug: row.SiteSlug,
		SocketLive: row.SocketLive, InventoryAt: row.InventoryCollectedAt, HasProcesses: row.HasProcesses,
		Capabilities: CapabilitiesFrom(row.Capabilities)}, nil
}

// OperationTargetByGUID is OperationTarget by GUID.
func (s *Service) OperationTargetByGUID(ctx context.Context, scope cairn.SiteScope, guid cairn.DeviceGUID) (OperationTarget, error) {
	row, err := s.store.DeviceOperationTargetByGUID(ctx, db.DeviceOperationTargetByGUIDParams{Guid: string(guid),
		FreshSeconds: SocketWindow.Seconds(), AllSites: scope.All, SiteIds: scope.SiteIDs})
	if err != nil {
		return OperationTarget{}, notFound(err)
	}
	if err := operable(row.Hostname, row.TrustState); err != nil {
		return OperationTarget{}, err
	}
	return OperationTarget{GUID: row.Guid, Hostname: row.Hostname, SiteID: row.SiteID, SiteSlug: row.SiteSlug, SocketLive: row.SocketLive,
		Capabilities: CapabilitiesFrom(row.Capabilities)}, nil
}

// CheckOperable re-checks trust right before a request goes out, so an
// operation queued before a quarantine sends nothing after it.
func (s *Service) CheckOperable(ctx context.Context, guid cairn.DeviceGUID) error {
	d, err := s.store.DeviceGetByGUID(ctx, guid)
	if err != nil {
		return db.NotFound(err, "the device was purged")
	}
	return operable(d.Hostname, d.TrustState)
}

func operable(hostname, trust string) error {
	switch trust {
	case devicetrust.TrustActive:
		return nil
	case devicetrust.TrustQuarantined:
		return cairn.Errorf(devicetrust.ECodeDeviceQuarantined, "%s is quarantined; release it before acting on it", hostname)
	default:
		return cairn.Errorf(devicetrust.ECodeDeviceRevoked, "%s is %s; it takes no operations", hostname, trust)
	}
}

// ApplyReply stores what an agent's answer to an operation of kind says
// about the device (a fresh process list, the services after an action,
// refreshed software or patches), through the same path as a details
// post, so events and hashes behave the same. It returns a one-line
// summary for the activity history.
func (s *Service) ApplyReply(ctx context.Context, guid, kind string, payload json.RawMessage) (string, error) {
	var (
		inv       proto.Inventory
		collected time.Time
		summary   string
	)
	switch kind {
	case proto.EventProcessManagement:
		var snap proto.ProcessSnapshot
		if json.Unmarshal(payload, &snap) == nil && snap.Processes != nil {
			inv.Processes, collected = snap.Processes, snap.CapturedAt
			summary = fmt.Sprintf("%d processes", len(snap.Processes))
		} else {
			var t proto.ProcessTerminated
			if err := json.Unmarshal(payload, &t); err != nil {
				return "", malformed(kind, err)
			}
			return fmt.Sprintf("terminated %s (PID %d)", t.Name, t.PID), nil
		}
	case proto.EventServiceControl:
		var r proto.ServiceActionResult
		if err := json.Unmarshal(payload, &r); err != nil {
			return "", malformed(kind, err)
		}
		if r.Services != nil {
			inv.Services = r.Services
		}
		summary = fmt.Sprintf("%s is %s", r.Name, r.State)
	case proto.EventSoftwareRefresh:
		var r proto.SoftwareRefreshResult
		if err := json.Unmarshal(payload, &r); err != nil {
			return "", malformed(kind, err)
		}
		inv.Software, collected = nonNil(r.Software), r.CollectedAt
		summary = fmt.Sprintf("%d software entries", len(r.Software))
	case proto.EventPatchRefresh:
		var r proto.PatchRefreshResult
		if err := json.Unmarshal(payload, &r); err != nil {
			return "", malformed(kind, err)
		}
		inv.Patches, inv.PatchStatus, collected = nonNil(r.Patches), r.Status, r.CollectedAt
		summary = fmt.Sprintf("%d patch rows", len(r.Patches))
	default:
		return "", nil
	}
	d, err := s.store.DeviceGetByGUID(ctx, cairn.DeviceGUID(guid))
	if err != nil {
		return "", db.NotFound(err, "the device was purged")
	}
	_, err = s.Details(ctx, devicetrust.Identity{GUID: d.Guid, SiteID: d.SiteID}, proto.Details{CollectedAt: collected, Inventory: inv})
	return summary, err
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func malformed(kind string, err error) error {
	return cairn.Errorf(ECodeAgentAnswer, "the agent's answer to %s is malformed: %v", kind, err)
}

// ECodeAgentAnswer: the agent answered something the Engine cannot use.
const ECodeAgentAnswer = "agent_answer_invalid"

// OperationStarted opens the activity row of operation operationID
// (status running) and returns its ID. It is idempotent per operation:
// a retry whose first try committed gets the row that try made.
func (s *Service) OperationStarted(ctx context.Context, t OperationTarget, operationID, kind, summary, actor string, meta map[string]any) (int64, error) {
	return s.OperationStartedIn(ctx, s.store.Queries, t, operationID, kind, summary, actor, meta)
}

// OperationStartedIn is OperationStarted inside the caller's transaction q.
func (s *Service) OperationStartedIn(ctx context.Context, q *db.Queries, t OperationTarget, operationID, kind, summary, actor string, meta map[string]any) (int64, error) {
	a, err := s.recordActivity(ctx, q, NewActivity{GUID: t.GUID, Hostname: t.Hostname, SiteID: t.SiteID, Kind: kind,
		Summary: summary, Actor: actor, Status: ActivityRunning, Metadata: meta, OperationID: cairn.OperationID(operationID)})
	if err == nil {
		s.cfg.Metrics.OperationStarted(kind)
	}
	return a.ID, err
}

// OperationFinished closes it with the outcome.
func (s *Service) OperationFinished(ctx context.Context, id int64, status, summary string, meta map[string]any) error {
	if len([]rune(summary)) > MaxActivitySummary {
		summary = string([]rune(summary)[:MaxActivitySummary])
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	kind, err := s.store.DeviceActivityFinish(ctx, db.DeviceActivityFinishParams{ID: id, Status: status, Summary: summary, Metadata: raw})
	if errors.Is(err, pgx.ErrNoRows) {
		// The row went with its device; there is nothing to close.
		return nil
	}
	if err != nil {
		return err
	}
	s.cfg.Metrics.OperationFinished(kind, status)
	return nil
}
