package devices

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// Activity statuses.
const (
	ActivityQueued    = "queued"
	ActivityRunning   = "running"
	ActivityCompleted = "completed"
	ActivityFailed    = "failed"
	ActivityCancelled = "cancelled"
)

// Bounds of activity rows.
const (
	MaxActivitySummary = 500
	MaxActivityPage    = 200
	// DefaultActivityPage is the page size when the caller names none.
	DefaultActivityPage = 50
)

var kindPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// Activity is one row of a device's activity history.
type Activity struct {
	ID       int64
	GUID     cairn.DeviceGUID // "" once the device was purged, or when never linked
	Hostname string
	SiteID   cairn.SiteID // 0 when none
	Kind     string
	Summary  string
	Actor    string
	Status   string
	// Metadata is a JSON object.
	Metadata   json.RawMessage
	CreatedAt  time.Time
	FinishedAt *time.Time
}

// NewActivity is what RecordActivity records.
type NewActivity struct {
	GUID     cairn.DeviceGUID // optional link to the device
	Hostname string           // required: history is kept by hostname
	SiteID   cairn.SiteID     // optional
	Kind     string           // e.g. "device_quarantined", "enrollment_approved"
	Summary  string
	Actor    string // operator username, or "" for the system
	Status   string // default completed
	Metadata map[string]any
	// FinishedAt defaults to now for completed, failed and cancelled rows.
	FinishedAt *time.Time
	// OperationID keys the row of an operation (optional): recording it
	// again returns the row there is rather than adding a second.
	OperationID cairn.OperationID
}

// RecordActivity adds a row to a device's activity history, for the parts
// of the Engine that act on devices (trust actions, enrollment, jobs).
func (s *Service) RecordActivity(ctx context.Context, a NewActivity) (Activity, error) {
	return s.recordActivity(ctx, s.store.Queries, a)
}

func (s *Service) recordActivity(ctx context.Context, q *db.Queries, a NewActivity) (Activity, error) {
	var v cairn.Validation
	if err := CheckHostname("hostname", a.Hostname); err != nil {
		v.Add("hostname", "is required, at most 255 characters")
	}
	if !kindPattern.MatchString(a.Kind) {
		v.Add("kind", "must be a lower-case word of letters, digits and _")
	}
	if n := len([]rune(strings.TrimSpace(a.Summary))); n == 0 || n > MaxActivitySummary {
		v.Add("summary", fmt.Sprintf("must be 1 to %d characters", MaxActivitySummary))
	}
	if a.Status == "" {
		a.Status = ActivityCompleted
	}
	if !slices.Contains([]string{ActivityQueued, ActivityRunning, ActivityCompleted, ActivityFailed, ActivityCancelled}, a.Status) {
		v.Add("status", "must be queued, running, completed, failed or cancelled")
	}
	if err := v.Err(); err != nil {
		return Activity{}, err
	}
	if a.Metadata == nil {
		a.Metadata = map[string]any{}
	}
	meta, err := json.Marshal(a.Metadata)
	if err != nil {
		return Activity{}, fmt.Errorf("activity metadata: %w", err)
	}
	p := db.DeviceActivityInsertParams{Hostname: a.Hostname, Kind: a.Kind, Summary: strings.TrimSpace(a.Summary),
		Actor: a.Actor, Status: a.Status, Metadata: meta, FinishedAt: a.FinishedAt}
	if a.GUID != "" {
		p.DeviceGuid = &a.GUID
	}
	if a.SiteID != 0 {
		p.SiteID = (*int64)(&a.SiteID)
	}
	if a.OperationID != "" {
		p.OperationID = &a.OperationID
	}
	if p.FinishedAt == nil && a.Status != ActivityQueued && a.Status != ActivityRunning {
		now := s.now()
		p.FinishedAt = &now
	}
	row, err := q.DeviceActivityInsert(ctx, p)
	if err != nil {
		return Activity{}, err
	}
	return activity(row), nil
}

func activity(r db.DeviceActivity) Activity {
	a := Activity{ID: r.ID, Hostname: r.Hostname, Kind: r.Kind, Summary: r.Summary, Actor: r.Actor, Status: r.Status,
		Metadata: r.Metadata, CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt}
	if r.DeviceGuid != nil {
		a.GUID = *r.DeviceGuid
	}
	if r.SiteID != nil {
		a.SiteID = *r.SiteID
	}
	return a
}

// ListActivity returns a hostname's activity inside scope, newest first:
// at most limit rows older than beforeID (0: from the newest). next is the
// beforeID of the following page, nil on the last. A hostname with neither
// a device nor history inside scope is not_found.
func (s *Service) ListActivity(ctx context.Context, scope cairn.SiteScope, hostname string, beforeID int64, limit int) (rows []Activity, next *int64, err error) {
	if err := CheckHostname("hostname", hostname); err != nil {
		return nil, nil, err
	}
	if limit <= 0 || limit > MaxActivityPage {
		limit = DefaultActivityPage
	}
	p := db.DeviceActivityListParams{Hostname: hostname, AllSites: scope.All, SiteIds: scope.IDs(), MaxRows: int32(limit + 1)}
	if beforeID > 0 {
		p.BeforeID = &beforeID
	}
	list, err := s.store.DeviceActivityList(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	if len(list) == 0 && beforeID == 0 {
		if _, err := s.hostRow(ctx, scope, hostname); err != nil {
			return nil, nil, err
		}
	}
	rows = make([]Activity, 0, min(len(list), limit))
	for i, r := range list {
		if i == limit {
			id := rows[limit-1].ID
			next = &id
			break
		}
		rows = append(rows, activity(r))
	}
	if err := s.nameJobs(ctx, rows); err != nil {
		return nil, nil, err
	}
	return rows, next, nil
}

// ClearActivity deletes a hostname's activity inside scope and returns how
// many rows went.
func (s *Service) ClearActivity(ctx context.Context, scope cairn.SiteScope, hostname string) (int64, error) {
	if err := CheckHostname("hostname", hostname); err != nil {
		return 0, err
	}
	n, err := s.store.DeviceActivityDelete(ctx, db.DeviceActivityDeleteParams{Hostname: hostname, AllSites: scope.All, SiteIds: scope.IDs()})
	if err != nil {
		return 0, err
	}
	if n == 0 {
		if _, err := s.hostRow(ctx, scope, hostname); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// GetActivity returns one activity row inside scope.
func (s *Service) GetActivity(ctx context.Context, scope cairn.SiteScope, id int64) (Activity, error) {
	if id <= 0 {
		return Activity{}, cairn.Invalid("id", "must be a positive integer")
	}
	r, err := s.store.DeviceActivityGet(ctx, db.DeviceActivityGetParams{ID: id, AllSites: scope.All, SiteIds: scope.IDs()})
	if err != nil {
		return Activity{}, db.NotFound(err, "activity not found")
	}
	rows := []Activity{activity(r)}
	if err := s.nameJobs(ctx, rows); err != nil {
		return Activity{}, err
	}
	return rows[0], nil
}

// nameJobs adds scheduled_job_name to the metadata of rows a scheduled
// job's run left (SPEC: rows carrying metadata.scheduled_job_id are
// enriched with the job's current name).
func (s *Service) nameJobs(ctx context.Context, rows []Activity) error {
	ids := map[int64][]int{}
	for i, a := range rows {
		var meta struct {
			JobID json.Number `json:"scheduled_job_id"`
		}
		if json.Unmarshal(a.Metadata, &meta) != nil || meta.JobID == "" {
			continue
		}
		id, err := meta.JobID.Int64()
		if err != nil {
			continue
		}
		ids[id] = append(ids[id], i)
	}
	if len(ids) == 0 {
		return nil
	}
	list := make([]int64, 0, len(ids))
	for id := range ids {
		list = append(list, id)
	}
	names, err := s.store.ScheduledJobNames(ctx, list)
	if err != nil {
		return err
	}
	for _, n := range names {
		for _, i := range ids[n.ID] {
			var meta map[string]any
			if json.Unmarshal(rows[i].Metadata, &meta) != nil {
				continue
			}
			meta["scheduled_job_name"] = n.Name
			if raw, err := json.Marshal(meta); err == nil {
				rows[i].Metadata = raw
			}
		}
	}
	return nil
}
