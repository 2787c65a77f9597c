package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
	"github.com/cairn-rmm/cairn/internal/ownership"
)

// Saved device-list views (docs/api.md "Device filters and saved views"):
// per operator, optionally shared; only the owner or an admin changes one.
func (s *Server) deviceViewRoutes() []Route {
	return []Route{
		{"GET", "/api/device_list_views", AuthToken, getAction(s, func(r *http.Request) (viewListJSON, error) {
			list, err := s.DeviceFilters.ListViews(r.Context(), viewer(r))
			out := make([]viewJSON, len(list))
			for i, v := range list {
				out[i] = toViewJSON(v)
			}
			return viewListJSON{Views: out}, err
		}), "List device list views"},
		{"POST", "/api/device_list_views", AuthToken, jsonAction(s, http.StatusCreated, false, func(r *http.Request, req viewRequest) (viewJSON, error) {
			v, err := s.DeviceFilters.CreateView(r.Context(), viewer(r), req.input())
			return toViewJSON(v), err
		}).Errors(cairn.ECodeConflict), "Create a device list view"},
		{"GET", "/api/device_list_views/{id}", AuthToken, getAction(s, func(r *http.Request) (viewJSON, error) {
			id, err := viewID(r)
			if err != nil {
				return viewJSON{}, err
			}
			v, err := s.DeviceFilters.GetView(r.Context(), viewer(r), id)
			return toViewJSON(v), err
		}).Errors(cairn.ECodeNotFound), "Get a device list view"},
		{"PUT", "/api/device_list_views/{id}", AuthToken, jsonAction(s, http.StatusOK, false, func(r *http.Request, req viewRequest) (viewJSON, error) {
			id, err := viewID(r)
			if err != nil {
				return viewJSON{}, err
			}
			v, err := s.DeviceFilters.UpdateView(r.Context(), viewer(r), id, req.input())
			return toViewJSON(v), err
		}).Errors(cairn.ECodeNotFound, cairn.ECodeConflict), "Update a device list view"},
		{"DELETE", "/api/device_list_views/{id}", AuthToken, jsonAction(s, http.StatusNoContent, true, func(r *http.Request, _ struct{}) (struct{}, error) {
			id, err := viewID(r)
			if err != nil {
				return struct{}{}, err
			}
			return struct{}{}, s.DeviceFilters.DeleteView(r.Context(), viewer(r), id)
		}).Errors(cairn.ECodeNotFound), "Delete a device list view"},
	}
}

func viewer(r *http.Request) devicefilters.Viewer {
	p := principal(r.Context())
	return devicefilters.Viewer{UserID: p.UserID, Admin: p.IsAdmin()}
}

// editor is who saves or deletes a shared automation object (an
// assembly, workflow or device filter): the operator with their scope.
func editor(r *http.Request) ownership.Editor {
	p := principal(r.Context())
	return ownership.Editor{UserID: p.UserID, Username: p.Username, Scope: p.SiteScope()}
}

func viewID(r *http.Request) (int64, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return 0, cairn.Errorf(cairn.ECodeNotFound, "device list view not found")
	}
	return id, nil
}

type viewJSON struct {
	ID        int64                   `json:"id"`
	Name      string                  `json:"name"`
	Columns   []string                `json:"columns"`
	Sort      *devicefilters.ViewSort `json:"sort"`
	FilterID  *int64                  `json:"filter_id"`
	Filter    *devicefilters.Node     `json:"filter"`
	Shared    bool                    `json:"shared"`
	Owner     string                  `json:"owner"`
	CreatedAt time.Time               `json:"created_at"`
	UpdatedAt time.Time               `json:"updated_at"`
}

func toViewJSON(v devicefilters.View) viewJSON {
	return viewJSON{ID: v.ID, Name: v.Name, Columns: v.Columns, Sort: v.Sort, FilterID: v.FilterID, Filter: v.Filter, Shared: v.Shared,
		Owner: v.Owner, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt}
}

type viewRequest struct {
	Name     string                  `json:"name" limit:"max=120"`
	Columns  []string                `json:"columns" limit:"max=60"`
	Sort     *devicefilters.ViewSort `json:"sort"`
	FilterID *int64                  `json:"filter_id"`
	Filter   json.RawMessage         `json:"filter" openapi:"ref=Node,nullable"`
	Shared   bool                    `json:"shared"`
	tree     *devicefilters.Node
}

func (req *viewRequest) validate() error {
	if len(req.Filter) == 0 || string(req.Filter) == "null" {
		return nil
	}
	n, err := devicefilters.Parse(req.Filter, "filter")
	req.tree = &n
	return err
}

func (req viewRequest) input() devicefilters.ViewInput {
	return devicefilters.ViewInput{Name: req.Name, Columns: req.Columns, Sort: req.Sort, FilterID: req.FilterID, Filter: req.tree,
		Shared: req.Shared}
}

type viewListJSON struct {
	Views []viewJSON `json:"views"`
}
