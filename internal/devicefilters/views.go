package devicefilters

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// MaxColumns bounds a view's columns.
const MaxColumns = 60

// ViewColumns are the column IDs a view may show besides metadata:<n>.
var ViewColumns = append(slices.Clone(SortColumns), "agent_socket", "agent_build_id", "agent_id", "guid")

// View is a saved device-list view.
type View struct {
	ID        int64
	Name      string
	Columns   []string
	Sort      *ViewSort
	FilterID  *int64
	Filter    *Node
	Shared    bool
	OwnerID   int64
	Owner     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ViewSort is a view's saved order.
type ViewSort struct {
	Column    string `json:"column"`
	Direction string `json:"direction" openapi:"enum=asc|desc"`
}

// ViewInput is what creating or updating a view takes; Filter has
// passed Parse.
type ViewInput struct {
	Name     string
	Columns  []string
	Sort     *ViewSort
	FilterID *int64
	Filter   *Node
	Shared   bool
}

// Viewer is who asks: views are per operator, admins may change anyone's.
type Viewer struct {
	UserID int64
	Admin  bool
}

func viewNotFound(err error) error { return db.NotFound(err, "device list view not found") }

func (in ViewInput) check() (ViewInput, []byte, error) {
	var v cairn.Validation
	in.Name = checkName(&v, "name", in.Name)
	if len(in.Columns) == 0 || len(in.Columns) > MaxColumns {
		v.Add("columns", fmt.Sprintf("must list 1 to %d columns", MaxColumns))
	}
	seen := map[string]bool{}
	for i, c := range in.Columns {
		_, err := ParseColumn(c)
		if err != nil && !slices.Contains(ViewColumns, c) {
			v.Add(fmt.Sprintf("columns[%d]", i), "is not a device list column")
		}
		if seen[c] {
			v.Add(fmt.Sprintf("columns[%d]", i), "is listed twice")
		}
		seen[c] = true
	}
	if in.Sort != nil {
		if _, err := ParseColumn(in.Sort.Column); err != nil {
			v.Add("sort.column", "is not a sortable column")
		}
		if in.Sort.Direction != "asc" && in.Sort.Direction != "desc" {
			v.Add("sort.direction", "must be asc or desc")
		}
	}
	if in.FilterID != nil && *in.FilterID <= 0 {
		v.Add("filter_id", "must be a device filter ID")
	}
	var tree []byte
	if in.Filter != nil {
		if err := in.Filter.Validate("filter"); err != nil {
			return in, nil, err
		}
		var err error
		if tree, err = json.Marshal(in.Filter); err != nil {
			return in, nil, err
		}
	}
	return in, tree, v.Err()
}

func (in ViewInput) sortParams() (col, dir *string) {
	if in.Sort == nil {
		return nil, nil
	}
	return &in.Sort.Column, &in.Sort.Direction
}

func viewWriteErr(err error) error {
	switch {
	case db.IsUniqueViolation(err, ""):
		return cairn.Errorf(cairn.ECodeConflict, "you have a device list view with this name")
	case db.IsForeignKeyViolation(err):
		return cairn.Invalid("filter_id", "is not a saved device filter")
	}
	return err
}

func viewFrom(r db.DeviceListView, owner string) (View, error) {
	v := View{ID: r.ID, Name: r.Name, Columns: r.Columns, FilterID: r.FilterID, Shared: r.Shared, OwnerID: r.OwnerID, Owner: owner,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if v.Columns == nil {
		v.Columns = []string{}
	}
	if r.SortColumn != nil && r.SortDirection != nil {
		v.Sort = &ViewSort{Column: *r.SortColumn, Direction: *r.SortDirection}
	}
	if len(r.Tree) > 0 && string(r.Tree) != "null" {
		var n Node
		if err := json.Unmarshal(r.Tree, &n); err != nil {
			return View{}, err
		}
		v.Filter = &n
	}
	return v, nil
}

// CreateView saves a view owned by who.
func (s *Service) CreateView(ctx context.Context, who Viewer, in ViewInput) (View, error) {
	in, tree, err := in.check()
	if err != nil {
		return View{}, err
	}
	col, dir := in.sortParams()
	id, err := s.store.DeviceListViewInsert(ctx, db.DeviceListViewInsertParams{OwnerID: who.UserID, Name: in.Name, Columns: in.Columns,
		SortColumn: col, SortDirection: dir, FilterID: in.FilterID, Tree: tree, Shared: in.Shared})
	if err != nil {
		return View{}, viewWriteErr(err)
	}
	return s.GetView(ctx, who, id)
}

// GetView returns a view the caller owns, one shared with everyone, or
// (for admins) any view; any other answers not_found.
func (s *Service) GetView(ctx context.Context, who Viewer, id int64) (View, error) {
	r, err := s.store.DeviceListViewGet(ctx, id)
	if err != nil {
		return View{}, viewNotFound(err)
	}
	if r.DeviceListView.OwnerID != who.UserID && !r.DeviceListView.Shared && !who.Admin {
		return View{}, cairn.Errorf(cairn.ECodeNotFound, "device list view not found")
	}
	return viewFrom(r.DeviceListView, r.Owner)
}

// ListViews returns the caller's views and those others shared, by name.
func (s *Service) ListViews(ctx context.Context, who Viewer) ([]View, error) {
	rows, err := s.store.DeviceListViewList(ctx, who.UserID)
	if err != nil {
		return nil, err
	}
	out := make([]View, len(rows))
	for i, r := range rows {
		if out[i], err = viewFrom(r.DeviceListView, r.Owner); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// editable loads a view the caller may change: its owner or an admin.
// Someone else's shared view answers forbidden; one they cannot see,
// not_found.
func (s *Service) editable(ctx context.Context, who Viewer, id int64) error {
	v, err := s.GetView(ctx, who, id)
	if err != nil {
		return err
	}
	if v.OwnerID != who.UserID && !who.Admin {
		return cairn.Errorf(cairn.ECodeForbidden, "only the owner or an admin may change this view")
	}
	return nil
}

// UpdateView replaces a view's settings (its owner stays).
func (s *Service) UpdateView(ctx context.Context, who Viewer, id int64, in ViewInput) (View, error) {
	in, tree, err := in.check()
	if err != nil {
		return View{}, err
	}
	if err := s.editable(ctx, who, id); err != nil {
		return View{}, err
	}
	col, dir := in.sortParams()
	if err := s.store.DeviceListViewUpdate(ctx, db.DeviceListViewUpdateParams{ID: id, Name: in.Name, Columns: in.Columns,
		SortColumn: col, SortDirection: dir, FilterID: in.FilterID, Tree: tree, Shared: in.Shared}); err != nil {
		return View{}, viewWriteErr(err)
	}
	return s.GetView(ctx, who, id)
}

// DeleteView removes a view (its owner or an admin).
func (s *Service) DeleteView(ctx context.Context, who Viewer, id int64) error {
	if err := s.editable(ctx, who, id); err != nil {
		return err
	}
	return s.store.DeviceListViewDelete(ctx, id)
}
