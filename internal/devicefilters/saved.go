package devicefilters

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/ownership"
)

// ECodeFilterInUse: a scheduled job targets the filter, so it cannot be
// deleted (409).
const ECodeFilterInUse = "filter_in_use"

// Bounds of saved filters.
const (
	MaxName        = 120
	MaxDescription = 1000
	MaxSearch      = 100
	DefaultSearch  = 25
)

// Filter is a saved filter.
type Filter struct {
	ID          int64
	Name        string
	Description string
	Tree        Node
	// OwnerUserID is who created it; SiteScope the sites of everyone
	// who saved it, which decides who may change it (package ownership).
	OwnerUserID *int64
	SiteScope   cairn.SiteScope
	CreatedBy   string
	CreatedAt   time.Time
	UpdatedBy   string
	UpdatedAt   time.Time
}

// FilterInput is what creating or updating a filter takes; Tree has
// passed Parse.
type FilterInput struct {
	Name        string
	Description string
	Tree        Node
}

func notFound(err error) error { return db.NotFound(err, "device filter not found") }

// checkName trims and checks a name of a filter or view.
func checkName(v *cairn.Validation, field, name string) string {
	name = strings.TrimSpace(name)
	if name == "" || len([]rune(name)) > MaxName || strings.ContainsFunc(name, unicode.IsControl) {
		v.Add(field, fmt.Sprintf("must be 1 to %d characters on one line", MaxName))
	}
	return name
}

func (in FilterInput) check() (FilterInput, []byte, error) {
	var v cairn.Validation
	in.Name = checkName(&v, "name", in.Name)
	in.Description = strings.TrimSpace(in.Description)
	if len([]rune(in.Description)) > MaxDescription {
		v.Add("description", fmt.Sprintf("must be at most %d characters", MaxDescription))
	}
	if err := in.Tree.Validate("filter"); err != nil {
		return in, nil, err
	}
	if err := v.Err(); err != nil {
		return in, nil, err
	}
	tree, err := json.Marshal(in.Tree)
	return in, tree, err
}

func filterFrom(r db.DeviceFilter) (Filter, error) {
	f := Filter{ID: r.ID, Name: r.Name, Description: r.Description, OwnerUserID: r.OwnerUserID,
		SiteScope: cairn.ScopeColumn(r.SiteScope), CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt,
		UpdatedBy: r.UpdatedBy, UpdatedAt: r.UpdatedAt}
	return f, json.Unmarshal(r.Tree, &f.Tree)
}

func conflict(err error) error {
	if db.IsUniqueViolation(err, "") {
		return cairn.Errorf(cairn.ECodeConflict, "a device filter with this name exists")
	}
	return err
}

// Create saves a filter owned by by and scoped to by's sites.
func (s *Service) Create(ctx context.Context, by ownership.Editor, in FilterInput) (Filter, error) {
	in, tree, err := in.check()
	if err != nil {
		return Filter{}, err
	}
	r, err := s.store.DeviceFilterInsert(ctx, db.DeviceFilterInsertParams{Name: in.Name, Description: in.Description, Tree: tree,
		Actor: by.Username, OwnerUserID: by.Owner(), SiteScope: by.Scope.Column()})
	if err != nil {
		return Filter{}, conflict(err)
	}
	return filterFrom(r)
}

// Update replaces a saved filter's name, description and tree. A filter
// is evaluated when the jobs targeting it fire, inside their savers'
// scope: by must cover the filter's scope, and no job saved by a broader
// scope may target it (ownership.CheckChange).
func (s *Service) Update(ctx context.Context, by ownership.Editor, id int64, in FilterInput) (Filter, error) {
	in, tree, err := in.check()
	if err != nil {
		return Filter{}, err
	}
	var r db.DeviceFilter
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		cur, err := q.DeviceFilterGetForUpdate(ctx, id)
		if err != nil {
			return notFound(err)
		}
		if err := mayChange(ctx, q, by, cur, true); err != nil {
			return err
		}
		r, err = q.DeviceFilterUpdate(ctx, db.DeviceFilterUpdateParams{ID: id, Name: in.Name, Description: in.Description, Tree: tree,
			Actor: by.Username, SiteScope: ownership.Scope(by, cairn.ScopeColumn(cur.SiteScope)).Column()})
		return err
	})
	if err != nil {
		return Filter{}, conflict(err)
	}
	return filterFrom(r)
}

// mayChange refuses a change of filter f by by (ownership.CheckChange),
// with the scheduled jobs targeting it as dependants when withJobs.
func mayChange(ctx context.Context, q *db.Queries, by ownership.Editor, f db.DeviceFilter, withJobs bool) error {
	var deps []ownership.Dependant
	if withJobs {
		jobs, err := q.DeviceFilterDependantJobs(ctx, f.ID)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			deps = append(deps, ownership.Dependant{Kind: ownership.KindScheduledJob, ID: j.ID, Name: j.Name,
				Scope: cairn.ScopeColumn(j.TargetScope)})
		}
	}
	return ownership.CheckChange(by, fmt.Sprintf("device filter %d", f.ID), cairn.ScopeColumn(f.SiteScope), deps)
}

// Get returns one saved filter.
func (s *Service) Get(ctx context.Context, id int64) (Filter, error) {
	r, err := s.store.DeviceFilterGet(ctx, id)
	if err != nil {
		return Filter{}, notFound(err)
	}
	return filterFrom(r)
}

// List returns every saved filter by name. Filters are shared objects:
// what they match is always evaluated inside the caller's scope.
func (s *Service) List(ctx context.Context) ([]Filter, error) {
	rows, err := s.store.DeviceFilterList(ctx)
	if err != nil {
		return nil, err
	}
	return filtersFrom(rows)
}

// Search finds saved filters whose name contains q (case-insensitive),
// exact and prefix matches first; at most limit of them.
func (s *Service) Search(ctx context.Context, q string, limit int) ([]Filter, error) {
	if limit <= 0 || limit > MaxSearch {
		limit = DefaultSearch
	}
	q = strings.TrimSpace(q)
	if len([]rune(q)) > MaxName {
		return nil, cairn.Invalid("q", fmt.Sprintf("must be at most %d characters", MaxName))
	}
	rows, err := s.store.DeviceFilterSearch(ctx, db.DeviceFilterSearchParams{Query: q, MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	return filtersFrom(rows)
}

func filtersFrom(rows []db.DeviceFilter) ([]Filter, error) {
	out := make([]Filter, len(rows))
	for i, r := range rows {
		f, err := filterFrom(r)
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	return out, nil
}

// Delete removes a saved filter unless a scheduled job targets it
// (filter_in_use) or by does not cover its scope (forbidden). Views that
// used it keep their other settings.
func (s *Service) Delete(ctx context.Context, by ownership.Editor, id int64) error {
	return s.store.InTx(ctx, func(q *db.Queries) error {
		cur, err := q.DeviceFilterGetForUpdate(ctx, id)
		if err != nil {
			return notFound(err)
		}
		if err := mayChange(ctx, q, by, cur, false); err != nil {
			return err
		}
		used, err := q.DeviceFilterInUse(ctx, id)
		if err != nil {
			return err
		}
		if used {
			return cairn.Errorf(ECodeFilterInUse, "a scheduled job targets this device filter; change the job first")
		}
		return q.DeviceFilterDelete(ctx, id)
	})
}
