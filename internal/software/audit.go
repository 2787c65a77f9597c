// Package software is the fleet view of installed software: the audit
// (devices per software variant across the caller's sites) and the global
// rules operators keep per software name: icon overrides, uninstall
// overrides and the uninstall blocklist (docs/api.md "Software audit").
//
// The audit reads aggregates that PostgreSQL keeps exact in the same
// transaction as every change to device_software (migration 00016), so a
// page costs an index scan, not a GROUP BY over every device's rows.
package software

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/inventory"
)

// Service is the software audit and rules.
type Service struct {
	store *db.Store
	now   func() time.Time
}

// New returns the service over store.
func New(store *db.Store) *Service { return &Service{store: store, now: time.Now} }

// Audit paging limits and sorts.
const (
	DefaultAuditLimit = 100
	MaxAuditLimit     = 500
	MaxQuery          = 256
)

// Sorts of the audit.
const (
	SortName          = "name"
	SortNameDesc      = "-name"
	SortDeviceCount   = "device_count"
	SortDeviceCountDn = "-device_count"
)

// AuditQuery is one page request.
type AuditQuery struct {
	Q      string
	Limit  int
	Offset int
	Sort   string
}

// AuditRow is one software variant and how many in-scope devices have it.
type AuditRow struct {
	Name              string  `json:"name"`
	Version           string  `json:"version"`
	Publisher         string  `json:"publisher"`
	DeviceCount       int64   `json:"device_count"`
	IconHash          *string `json:"icon_hash"`
	UninstallBlocked  bool    `json:"uninstall_blocked"`
	UninstallOverride bool    `json:"uninstall_override"`
	nameKey           string
}

// AuditPage is a page and the number of variants matching in all.
type AuditPage struct {
	Software []AuditRow `json:"software"`
	Total    int64      `json:"total"`
}

// Validate checks a query and fills its defaults.
func (q *AuditQuery) Validate() error {
	var v cairn.Validation
	if q.Limit == 0 {
		q.Limit = DefaultAuditLimit
	}
	if q.Limit < 1 || q.Limit > MaxAuditLimit {
		v.Add("limit", fmt.Sprintf("must be an integer from 1 to %d", MaxAuditLimit))
	}
	if q.Offset < 0 {
		v.Add("offset", "must be an integer of at least 0")
	}
	if q.Sort == "" {
		q.Sort = SortName
	}
	switch q.Sort {
	case SortName, SortNameDesc, SortDeviceCount, SortDeviceCountDn:
	default:
		v.Add("sort", "must be name, -name, device_count or -device_count")
	}
	q.Q = strings.TrimSpace(q.Q)
	if len([]rune(q.Q)) > MaxQuery {
		v.Add("q", fmt.Sprintf("must be at most %d characters", MaxQuery))
	}
	return v.Err()
}

// Audit answers one page of the software installed on the devices of
// scope. A scope covering every site reads the all-sites totals (an
// index scan in the requested order); a narrower one sums its sites.
func (s *Service) Audit(ctx context.Context, scope cairn.SiteScope, q AuditQuery) (AuditPage, error) {
	if err := q.Validate(); err != nil {
		return AuditPage{}, err
	}
	needle := inventory.SoftwareKey(q.Q)
	all := scope.All
	if !all {
		if len(scope.SiteIDs) == 0 {
			return AuditPage{Software: []AuditRow{}}, nil
		}
		covers, err := s.store.SoftwareAuditScopeCoversAll(ctx, scope.IDs())
		if err != nil {
			return AuditPage{}, err
		}
		all = covers != nil && *covers
	}
	var (
		page AuditPage
		err  error
	)
	if all {
		page, err = s.auditAll(ctx, needle, q)
	} else {
		page, err = s.auditScoped(ctx, scope.IDs(), needle, q)
	}
	if err != nil {
		return AuditPage{}, err
	}
	return page, s.decorate(ctx, page.Software)
}

func (s *Service) auditAll(ctx context.Context, needle string, q AuditQuery) (AuditPage, error) {
	var (
		rows []db.SoftwareAuditTotal
		err  error
	)
	limit, offset := int32(q.Limit), int32(min(q.Offset, 1<<30))
	switch q.Sort {
	case SortName:
		rows, err = s.store.SoftwareAuditAllByName(ctx, db.SoftwareAuditAllByNameParams{Q: needle, MaxRows: limit, Skip: offset})
	case SortNameDesc:
		rows, err = s.store.SoftwareAuditAllByNameDesc(ctx, db.SoftwareAuditAllByNameDescParams{Q: needle, MaxRows: limit, Skip: offset})
	case SortDeviceCount:
		rows, err = s.store.SoftwareAuditAllByCount(ctx, db.SoftwareAuditAllByCountParams{Q: needle, MaxRows: limit, Skip: offset})
	default:
		rows, err = s.store.SoftwareAuditAllByCountDesc(ctx, db.SoftwareAuditAllByCountDescParams{Q: needle, MaxRows: limit, Skip: offset})
	}
	if err != nil {
		return AuditPage{}, err
	}
	total, err := s.store.SoftwareAuditAllCount(ctx, needle)
	if err != nil {
		return AuditPage{}, err
	}
	page := AuditPage{Software: make([]AuditRow, len(rows)), Total: total}
	for i, r := range rows {
		page.Software[i] = AuditRow{Name: r.Name, Version: r.Version, Publisher: r.Publisher, DeviceCount: r.DeviceCount, nameKey: r.NameKey}
	}
	return page, nil
}

func (s *Service) auditScoped(ctx context.Context, sites []int64, needle string, q AuditQuery) (AuditPage, error) {
	rows, err := s.store.SoftwareAuditScoped(ctx, db.SoftwareAuditScopedParams{SiteIds: sites, Q: needle, Sort: q.Sort,
		MaxRows: int32(q.Limit), Skip: int32(min(q.Offset, 1<<30))})
	if err != nil {
		return AuditPage{}, err
	}
	page := AuditPage{Software: make([]AuditRow, len(rows))}
	for i, r := range rows {
		page.Software[i] = AuditRow{Name: r.Name, Version: r.Version, Publisher: r.Publisher, DeviceCount: r.DeviceCount, nameKey: r.NameKey}
		page.Total = r.Total
	}
	if len(rows) == 0 && q.Offset > 0 {
		// Past the end: the window count had no row to ride on.
		if page.Total, err = s.store.SoftwareAuditScopedCount(ctx, db.SoftwareAuditScopedCountParams{SiteIds: sites, Q: needle}); err != nil {
			return AuditPage{}, err
		}
	}
	return page, nil
}

// decorate adds the rules that apply to each row of a page.
func (s *Service) decorate(ctx context.Context, rows []AuditRow) error {
	if len(rows) == 0 {
		return nil
	}
	keys := make([]string, 0, len(rows))
	for _, r := range rows {
		keys = append(keys, r.nameKey)
	}
	rules, err := s.store.SoftwareRulesForNames(ctx, keys)
	if err != nil {
		return err
	}
	type nv struct{ name, version string }
	icons := map[string]*string{}
	blocks, overrides := map[nv]bool{}, map[nv]bool{}
	for _, r := range rules {
		switch r.Kind {
		case "icon":
			icons[r.NameKey] = r.IconHash
		case "block":
			blocks[nv{r.NameKey, r.Version}] = true
		case "override":
			overrides[nv{r.NameKey, r.Version}] = true
		}
	}
	for i := range rows {
		r := &rows[i]
		r.IconHash = icons[r.nameKey]
		r.UninstallBlocked = blocks[nv{r.nameKey, ""}] || blocks[nv{r.nameKey, r.Version}]
		r.UninstallOverride = overrides[nv{r.nameKey, ""}] || overrides[nv{r.nameKey, r.Version}]
	}
	return nil
}
