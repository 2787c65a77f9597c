package devicefilters

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// Config tunes the service; zero values take the defaults.
type Config struct {
	// OnlineWindow and SocketWindow are internal/devices' windows
	// (devices.Service.OnlineWindow and devices.SocketWindow); the
	// engine passes them so the status rule has one source.
	OnlineWindow time.Duration
	SocketWindow time.Duration
	Now          func() time.Time
}

// Service evaluates filters and keeps saved filters and views.
type Service struct {
	store *db.Store
	cfg   Config
}

// New returns the service.
func New(store *db.Store, cfg Config) *Service {
	if cfg.OnlineWindow <= 0 {
		cfg.OnlineWindow = 90 * time.Second
	}
	if cfg.SocketWindow <= 0 {
		cfg.SocketWindow = 90 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{store: store, cfg: cfg}
}

// OnlineWindow is the configured online window.
func (s *Service) OnlineWindow() time.Duration { return s.cfg.OnlineWindow }

// Paging bounds of the device list.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Sort is a device-list order: a column and a direction. Column is one
// of SortColumns or "metadata" with Metadata the field number.
type Sort struct {
	Column   string
	Metadata int
	Desc     bool
}

// SortColumns are the columns the device list sorts on (besides
// metadata:<n>).
var SortColumns = []string{"hostname", "site", "status", "last_seen", "os", "agent_version", "description", "trust_state"}

// ParseSort reads a sort parameter: a column, "-" first for descending
// ("" is hostname ascending). field names the parameter in errors.
func ParseSort(field, raw string) (Sort, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return Sort{Column: "hostname"}, nil
	}
	var s Sort
	if rest, ok := strings.CutPrefix(raw, "-"); ok {
		s.Desc, raw = true, rest
	}
	col, err := ParseColumn(raw)
	if err != nil || col.Column == "" {
		return Sort{}, cairn.Invalid(field, "must be one of "+strings.Join(SortColumns, ", ")+" or metadata:<1-500>, with - first for descending")
	}
	s.Column, s.Metadata = col.Column, col.Metadata
	return s, nil
}

// String is the sort in parameter form ("-last_seen", "metadata:5").
func (s Sort) String() string {
	out := s.Column
	if s.Column == "metadata" {
		out = "metadata:" + strconv.Itoa(s.Metadata)
	}
	if s.Desc {
		out = "-" + out
	}
	return out
}

// ParseColumn reads a sortable column ID: one of SortColumns or
// metadata:<n>.
func ParseColumn(raw string) (Sort, error) {
	if rest, ok := strings.CutPrefix(raw, "metadata:"); ok {
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 || n > MetadataFields || strconv.Itoa(n) != rest {
			return Sort{}, fmt.Errorf("bad metadata column")
		}
		return Sort{Column: "metadata", Metadata: n}, nil
	}
	for _, c := range SortColumns {
		if raw == c {
			return Sort{Column: c}, nil
		}
	}
	return Sort{}, fmt.Errorf("not a sort column")
}

// PageQuery is one page of the device list. Filters (validated trees:
// a saved one, a draft), SiteID and Status (canonical) all narrow
// together.
type PageQuery struct {
	Filters []Node
	SiteID  cairn.SiteID
	Status  string
	Sort    Sort
	Limit   int
	Offset  int
}

// Row is a device as the paged query reads it; internal/devices turns it
// into devices.Device (devices.Service.FromFilterRows).
type Row struct {
	GUID            cairn.DeviceGUID
	AgentID         string
	Hostname        string
	Description     string
	SiteID          cairn.SiteID
	SiteName        string
	SiteSlug        string
	LastSeen        *time.Time
	SocketReplica   *string
	SocketSeenAt    *time.Time
	OperatingSystem string
	AgentVersion    string
	AgentBuildID    string
	TrustState      string
	BootID          string
	HelperContexts  []string
	Metrics         []byte
	EnrolledAt      time.Time
}

// Page is one page of rows, the total matching, and the time statuses
// were decided at.
type Page struct {
	Rows  []Row
	Total int64
	Now   time.Time
}

// DeviceRef names a matching device.
type DeviceRef struct {
	GUID     cairn.DeviceGUID
	Hostname string
	SiteID   cairn.SiteID
}

// selection compiles scope, drilldowns and trees into one WHERE clause
// over devices d, or with rows over device_filter_rows d (for a total).
func (s *Service) selection(scope cairn.SiteScope, now time.Time, filters []Node, siteID cairn.SiteID, status string, rows bool) (*selection, error) {
	q := &query{now: now, rows: rows, cutoffs: [2]time.Time{ceilMicro(now.Add(-s.cfg.OnlineWindow)), ceilMicro(now.Add(-s.cfg.SocketWindow))}}
	sel := &selection{q: q}
	if scope.All {
		sel.where = append(sel.where, sqlAllSites)
	} else {
		sel.where = append(sel.where, fmt.Sprintf(sqlScope, q.arg(scope.IDs())))
	}
	if siteID != 0 {
		sel.where = append(sel.where, fmt.Sprintf(sqlSiteIs, q.arg(siteID)))
	}
	if status != "" {
		st, ok := canonicalStatus(status)
		if !ok {
			return nil, cairn.Invalid("status", "must be connected, disconnected or offline")
		}
		sel.where = append(sel.where, q.status(st))
	}
	for i, f := range filters {
		e, err := f.compileable(fmt.Sprintf("filters[%d]", i))
		if err != nil {
			return nil, err
		}
		sel.where = append(sel.where, q.expr(e))
	}
	return sel, nil
}

func canonicalStatus(token string) (string, bool) {
	for _, st := range []string{Connected, Disconnected, Offline} {
		if strings.EqualFold(strings.TrimSpace(token), st) {
			return st, true
		}
	}
	return "", false
}

// Page returns one page of the devices inside scope that match every
// filter and drilldown, in the query's order (ties by GUID), with the
// total that match.
func (s *Service) Page(ctx context.Context, scope cairn.SiteScope, pq PageQuery) (Page, error) {
	if pq.Limit <= 0 {
		pq.Limit = DefaultLimit
	}
	if pq.Limit > MaxLimit {
		return Page{}, cairn.Invalid("limit", fmt.Sprintf("must be 1 to %d", MaxLimit))
	}
	if pq.Offset < 0 {
		return Page{}, cairn.Invalid("offset", "must be at least 0")
	}
	if pq.Sort.Column == "" {
		pq.Sort.Column = "hostname"
	}
	if _, ok := sortKeys[pq.Sort.Column]; !ok {
		return Page{}, cairn.Invalid("sort", "is not a sort column")
	}
	now := s.cfg.Now().UTC()
	sel, err := s.selection(scope, now, pq.Filters, pq.SiteID, pq.Status, false)
	if err != nil {
		return Page{}, err
	}
	rowsSQL := sel.pageSQL(pq.Sort, pq.Limit, pq.Offset)
	// The total reads the narrow copy unless a condition needs a column
	// only devices has.
	cnt, err := s.selection(scope, now, pq.Filters, pq.SiteID, pq.Status, true)
	if err != nil {
		return Page{}, err
	}
	if cnt.q.metrics {
		if cnt, err = s.selection(scope, now, pq.Filters, pq.SiteID, pq.Status, false); err != nil {
			return Page{}, err
		}
	}

	batch := &pgx.Batch{}
	var page = Page{Rows: []Row{}, Now: now}
	batch.Queue(cnt.countSQL(), cnt.q.args...).QueryRow(func(r pgx.Row) error { return r.Scan(&page.Total) })
	batch.Queue(rowsSQL, sel.q.args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var r Row
			if err := rows.Scan(&r.GUID, &r.AgentID, &r.Hostname, &r.Description, &r.SiteID, &r.SiteName, &r.SiteSlug, &r.LastSeen,
				&r.SocketReplica, &r.SocketSeenAt, &r.OperatingSystem, &r.AgentVersion, &r.AgentBuildID, &r.TrustState, &r.BootID,
				&r.HelperContexts, &r.Metrics, &r.EnrolledAt); err != nil {
				return err
			}
			page.Rows = append(page.Rows, r)
		}
		return rows.Err()
	})
	if err := s.store.DB().SendBatch(ctx, batch).Close(); err != nil {
		return Page{}, err
	}
	return page, nil
}

// MatchGUIDs returns every device inside scope that tree matches, by
// GUID. This is what scheduled jobs, watchdogs and patch policies call.
func (s *Service) MatchGUIDs(ctx context.Context, scope cairn.SiteScope, tree Node) ([]DeviceRef, error) {
	return s.Match(ctx, scope, []Node{tree})
}

// Match is MatchGUIDs over several trees that must all match.
func (s *Service) Match(ctx context.Context, scope cairn.SiteScope, trees []Node) ([]DeviceRef, error) {
	sel, err := s.selection(scope, s.cfg.Now().UTC(), trees, 0, "", false)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.DB().Query(ctx, sel.refsSQL(), sel.q.args...)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeviceRef, error) {
		var d DeviceRef
		err := r.Scan(&d.GUID, &d.Hostname, &d.SiteID)
		return d, err
	})
	if out == nil {
		out = []DeviceRef{}
	}
	return out, err
}

// MatchSaved resolves saved filters (a job's targets) inside scope: the
// devices any of them matches, by GUID. A missing filter is not_found.
func (s *Service) MatchSaved(ctx context.Context, scope cairn.SiteScope, ids []int64) ([]DeviceRef, error) {
	seen := map[string]bool{}
	out := []DeviceRef{}
	for _, id := range ids {
		f, err := s.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		refs, err := s.MatchGUIDs(ctx, scope, f.Tree)
		if err != nil {
			return nil, err
		}
		for _, r := range refs {
			if !seen[string(r.GUID)] {
				seen[string(r.GUID)] = true
				out = append(out, r)
			}
		}
	}
	slices.SortFunc(out, func(a, b DeviceRef) int { return strings.Compare(string(a.GUID), string(b.GUID)) })
	return out, nil
}
