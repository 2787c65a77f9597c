// Package sites manages sites: the unit of device grouping, operator scope
// and worker placement (each site's workflows run on its own task queue).
package sites

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

const (
	maxSlug = 51
	maxName = 100
)

// The slug becomes a task-queue name and appears in URLs, so it is kept to
// lower-case DNS-label characters.
var slugPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// Site is a site as the API shows it.
type Site struct {
	ID          cairn.SiteID
	Name        string
	Slug        string
	DeviceCount int64
	// AutoApproveUntil is when temporary auto-approval ends (nil: off).
	AutoApproveUntil *time.Time
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// AutoApproving reports whether enrollment requests for the site are
// approved at once at now.
func (st Site) AutoApproving(now time.Time) bool {
	return st.AutoApproveUntil != nil && now.Before(*st.AutoApproveUntil)
}

// Service implements site management. changed is called after a commit
// that created, renamed or deleted sites (it tells every replica's worker
// manager to resync).
type Service struct {
	store   *db.Store
	changed func(context.Context) error
}

// NewService returns the service.
func NewService(store *db.Store, changed func(context.Context) error) *Service {
	return &Service{store: store, changed: changed}
}

// SlugProblem says what is wrong with a slug, or "".
func SlugProblem(slug string) string {
	switch {
	case slug == "":
		return "is required"
	case len(slug) > maxSlug:
		return fmt.Sprintf("must be at most %d characters", maxSlug)
	case !slugPattern.MatchString(slug):
		return "must be lower-case letters, digits and '-', starting and ending with a letter or digit"
	}
	return ""
}

func checkName(v *cairn.Validation, name string) {
	switch n := len([]rune(name)); {
	case n == 0:
		v.Add("name", "is required")
	case n > maxName:
		v.Add("name", fmt.Sprintf("must be at most %d characters", maxName))
	}
}

// List returns the sites inside scope.
func (s *Service) List(ctx context.Context, scope cairn.SiteScope) ([]Site, error) {
	rows, err := s.store.SiteList(ctx, db.SiteListParams{AllSites: scope.All, SiteIds: scope.IDs()})
	if err != nil {
		return nil, err
	}
	out := make([]Site, len(rows))
	for i, r := range rows {
		out[i] = Site{ID: r.ID, Name: r.Name, Slug: r.Slug, DeviceCount: r.DeviceCount, AutoApproveUntil: r.AutoApproveUntil,
			CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	}
	return out, nil
}

// Slugs lists every site's slug (for the worker manager).
func (s *Service) Slugs(ctx context.Context) ([]string, error) {
	sites, err := s.List(ctx, cairn.AllSites)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(sites))
	for i, st := range sites {
		out[i] = st.Slug
	}
	return out, nil
}

// Get returns one site.
func (s *Service) Get(ctx context.Context, id cairn.SiteID) (Site, error) {
	r, err := s.store.SiteGet(ctx, id)
	if err != nil {
		return Site{}, db.NotFound(err, "site %d not found", id)
	}
	return Site{ID: r.ID, Name: r.Name, Slug: r.Slug, DeviceCount: r.DeviceCount, AutoApproveUntil: r.AutoApproveUntil,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}

// Create adds a site.
func (s *Service) Create(ctx context.Context, name, slug string) (Site, error) {
	name = strings.TrimSpace(name)
	var v cairn.Validation
	checkName(&v, name)
	if p := SlugProblem(slug); p != "" {
		v.Add("site_worker_slug", p)
	}
	if err := v.Err(); err != nil {
		return Site{}, err
	}
	row, err := s.store.SiteInsert(ctx, db.SiteInsertParams{Name: name, Slug: slug})
	if db.IsUniqueViolation(err, "sites_slug_key") {
		return Site{}, slugTaken(slug)
	} else if err != nil {
		return Site{}, err
	}
	s.notify(ctx)
	return Site{ID: row.ID, Name: row.Name, Slug: row.Slug, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt}, nil
}

// Rename changes name and, when slug is not empty, the slug.
func (s *Service) Rename(ctx context.Context, id cairn.SiteID, name, slug string) (Site, error) {
	name = strings.TrimSpace(name)
	var v cairn.Validation
	if id <= 0 {
		v.Add("site_id", "is required")
	}
	checkName(&v, name)
	if slug != "" {
		if p := SlugProblem(slug); p != "" {
			v.Add("site_worker_slug", p)
		}
	}
	if err := v.Err(); err != nil {
		return Site{}, err
	}
	cur, err := s.Get(ctx, id)
	if err != nil {
		return Site{}, err
	}
	if slug == "" {
		slug = cur.Slug
	}
	row, err := s.store.SiteUpdate(ctx, db.SiteUpdateParams{ID: id, Name: name, Slug: slug})
	if db.IsUniqueViolation(err, "sites_slug_key") {
		return Site{}, slugTaken(slug)
	} else if err != nil {
		return Site{}, db.NotFound(err, "site %d not found", id)
	}
	if slug != cur.Slug {
		s.notify(ctx)
	}
	return Site{ID: row.ID, Name: row.Name, Slug: row.Slug, DeviceCount: cur.DeviceCount, AutoApproveUntil: row.AutoApproveUntil,
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt}, nil
}

// Temporary auto-approval bounds: long enough to enroll a batch of
// machines, short enough that a forgotten switch closes by itself.
const (
	MinAutoApproval     = time.Minute
	MaxAutoApproval     = 24 * time.Hour
	DefaultAutoApproval = time.Hour
)

// SetAutoApproval turns temporary auto-approval on for duration from now
// (MinAutoApproval to MaxAutoApproval), or off.
func (s *Service) SetAutoApproval(ctx context.Context, id cairn.SiteID, enabled bool, duration time.Duration, now time.Time) (Site, error) {
	if id <= 0 {
		return Site{}, cairn.Invalid("site_id", "must be a positive site ID")
	}
	var until *time.Time
	if enabled {
		if duration < MinAutoApproval || duration > MaxAutoApproval {
			return Site{}, cairn.Invalid("duration_seconds", fmt.Sprintf("must be from %d to %d seconds",
				int(MinAutoApproval.Seconds()), int(MaxAutoApproval.Seconds())))
		}
		u := now.UTC().Add(duration).Truncate(time.Second)
		until = &u
	}
	cur, err := s.Get(ctx, id)
	if err != nil {
		return Site{}, err
	}
	row, err := s.store.SiteAutoApprovalSet(ctx, db.SiteAutoApprovalSetParams{ID: id, Until: until})
	if err != nil {
		return Site{}, db.NotFound(err, "site %d not found", id)
	}
	return Site{ID: row.ID, Name: row.Name, Slug: row.Slug, DeviceCount: cur.DeviceCount, AutoApproveUntil: row.AutoApproveUntil,
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt}, nil
}

// Delete removes the sites, all or none: an unknown ID is not_found and a
// site that still has devices is site_not_empty.
func (s *Service) Delete(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return cairn.Invalid("site_ids", "must name at least one site")
	}
	seen := map[int64]bool{}
	for _, id := range ids {
		if id <= 0 {
			return cairn.Invalid("site_ids", "must be positive site IDs")
		}
		seen[id] = true
	}
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		counts, err := q.SiteDeviceCounts(ctx, ids)
		if err != nil {
			return err
		}
		if len(counts) != len(seen) {
			return cairn.Errorf(cairn.ECodeNotFound, "one or more sites do not exist")
		}
		for _, c := range counts {
			if c.DeviceCount > 0 {
				return cairn.Errorf(cairn.ECodeSiteNotEmpty, "site %d still has %d devices; move or remove them first", c.ID, c.DeviceCount)
			}
		}
		_, err = q.SiteDeleteMany(ctx, ids)
		return err
	})
	if err != nil {
		return err
	}
	s.notify(ctx)
	return nil
}

// DeviceSite is one entry of the device map.
type DeviceSite struct {
	SiteID   cairn.SiteID
	SiteName string
}

// DeviceMap maps the hostnames inside scope to their site.
func (s *Service) DeviceMap(ctx context.Context, scope cairn.SiteScope) (map[string]DeviceSite, error) {
	rows, err := s.store.DeviceSiteMap(ctx, db.DeviceSiteMapParams{AllSites: scope.All, SiteIds: scope.IDs()})
	if err != nil {
		return nil, err
	}
	out := make(map[string]DeviceSite, len(rows))
	for _, r := range rows {
		out[r.Hostname] = DeviceSite{SiteID: r.SiteID, SiteName: r.SiteName}
	}
	return out, nil
}

// notify tells the worker managers; the change is committed already, and a
// lost signal is repaired by their periodic resync, so a failure is logged
// by the caller's bus rather than failing the request.
func (s *Service) notify(ctx context.Context) {
	if s.changed != nil {
		_ = s.changed(ctx)
	}
}

func slugTaken(slug string) error {
	return &cairn.Error{Code: cairn.ECodeConflict, Message: "that slug is already used by another site",
		Fields: map[string]string{"site_worker_slug": fmt.Sprintf("%q is already used by another site", slug)}}
}
