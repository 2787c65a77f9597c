package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
)

// Device filter routes (docs/api.md "Device filters and saved views").
// Filters are shared objects; what they match is always evaluated inside
// the caller's site scope.
func (s *Server) deviceFilterRoutes() []Route {
	return []Route{
		{"GET", "/api/device_filters", AuthToken, getAction(s, func(r *http.Request) (filterListJSON, error) {
			list, err := s.DeviceFilters.List(r.Context())
			return filterListJSON{Filters: toFilterJSONs(list)}, err
		}), "List device filters"},
		{"POST", "/api/device_filters", AuthToken, jsonAction(s, http.StatusCreated, false, func(r *http.Request, req filterRequest) (filterJSON, error) {
			f, err := s.DeviceFilters.Create(r.Context(), editor(r), req.input())
			return toFilterJSON(f), err
		}).Errors(cairn.ECodeConflict), "Create a device filter"},
		{"GET", "/api/device_filters/metadata", AuthToken, getAction(s, s.deviceFilterMetadata), "Get the device filter fields"},
		{"GET", "/api/device_filters/search", AuthToken, getAction(s, func(r *http.Request) (filterListJSON, error) {
			limit, err := queryInt(r, "limit", devicefilters.DefaultSearch, 1, devicefilters.MaxSearch)
			if err != nil {
				return filterListJSON{}, err
			}
			list, err := s.DeviceFilters.Search(r.Context(), r.URL.Query().Get("q"), limit)
			return filterListJSON{Filters: toFilterJSONs(list)}, err
		}).Query(queryInteger("limit", "filters to return"), queryString("q", "a search in filter names")), "Search device filters"},
		{"POST", "/api/device_filters/preview", AuthToken, jsonAction(s, http.StatusOK, false, func(r *http.Request, req filterPreviewRequest) (filterPreviewJSON, error) {
			limit := 25
			if req.Limit != nil {
				limit = *req.Limit
			}
			page, err := s.DeviceFilters.Page(r.Context(), principal(r.Context()).SiteScope(), devicefilters.PageQuery{
				Filters: []devicefilters.Node{req.tree}, Sort: devicefilters.Sort{Column: "hostname"}, Limit: limit})
			if err != nil {
				return filterPreviewJSON{}, err
			}
			rows, err := s.deviceRows(r.Context(), page)
			return filterPreviewJSON{Total: page.Total, Devices: rows}, err
		}), "Preview a device filter"},
		{"GET", "/api/device_filters/{id}", AuthToken, getAction(s, func(r *http.Request) (filterJSON, error) {
			id, err := filterID(r)
			if err != nil {
				return filterJSON{}, err
			}
			f, err := s.DeviceFilters.Get(r.Context(), id)
			return toFilterJSON(f), err
		}).Errors(cairn.ECodeNotFound), "Get a device filter"},
		{"PUT", "/api/device_filters/{id}", AuthToken, jsonAction(s, http.StatusOK, false, func(r *http.Request, req filterRequest) (filterJSON, error) {
			id, err := filterID(r)
			if err != nil {
				return filterJSON{}, err
			}
			f, err := s.DeviceFilters.Update(r.Context(), editor(r), id, req.input())
			return toFilterJSON(f), err
		}).Errors(cairn.ECodeNotFound, cairn.ECodeForbidden, cairn.ECodeConflict, cairn.ECodeDependantsExist), "Update a device filter"},
		{"DELETE", "/api/device_filters/{id}", AuthToken, jsonAction(s, http.StatusNoContent, true, func(r *http.Request, _ struct{}) (struct{}, error) {
			id, err := filterID(r)
			if err != nil {
				return struct{}{}, err
			}
			return struct{}{}, s.DeviceFilters.Delete(r.Context(), editor(r), id)
		}).Errors(cairn.ECodeNotFound, cairn.ECodeForbidden, devicefilters.ECodeFilterInUse), "Delete a device filter"},
	}
}

// filterID is the {id} of a filter path; anything but a positive integer
// names no filter.
func filterID(r *http.Request) (int64, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return 0, cairn.Errorf(cairn.ECodeNotFound, "device filter not found")
	}
	return id, nil
}

type filterJSON struct {
	ID          int64              `json:"id"`
	Name        string             `json:"name"`
	Description string             `json:"description"`
	Filter      devicefilters.Node `json:"filter"`
	// OwnerUserID created the filter; SiteScope is the sites of everyone
	// who saved it (null: every site): only a caller whose sites cover it
	// may change it (docs/api.md "Shared objects: owner and scope").
	OwnerUserID *int64    `json:"owner_user_id"`
	SiteScope   []int64   `json:"site_scope" openapi:"nullable"`
	CreatedBy   string    `json:"created_by"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedBy   string    `json:"updated_by"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func toFilterJSON(f devicefilters.Filter) filterJSON {
	return filterJSON{ID: f.ID, Name: f.Name, Description: f.Description, Filter: f.Tree, OwnerUserID: f.OwnerUserID,
		SiteScope: f.SiteScope.Column(), CreatedBy: f.CreatedBy, CreatedAt: f.CreatedAt,
		UpdatedBy: f.UpdatedBy, UpdatedAt: f.UpdatedAt}
}

func toFilterJSONs(list []devicefilters.Filter) []filterJSON {
	out := make([]filterJSON, len(list))
	for i, f := range list {
		out[i] = toFilterJSON(f)
	}
	return out
}

type filterRequest struct {
	Name        string          `json:"name" limit:"max=120"`
	Description string          `json:"description" limit:"max=1000"`
	Filter      json.RawMessage `json:"filter" openapi:"ref=Node"`
	tree        devicefilters.Node
}

func (req *filterRequest) validate() (err error) {
	req.tree, err = parseFilter(req.Filter)
	return err
}

func (req filterRequest) input() devicefilters.FilterInput {
	return devicefilters.FilterInput{Name: req.Name, Description: req.Description, Tree: req.tree}
}

// parseFilter reads a request body's "filter" tree.
func parseFilter(raw json.RawMessage) (devicefilters.Node, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return devicefilters.Node{}, cairn.Invalid("filter", "is required")
	}
	return devicefilters.Parse(raw, "filter")
}

type filterPreviewRequest struct {
	Filter json.RawMessage `json:"filter" openapi:"ref=Node"`
	Limit  *int            `json:"limit"`
	tree   devicefilters.Node
}

func (req *filterPreviewRequest) validate() (err error) {
	if req.Limit != nil && (*req.Limit < 1 || *req.Limit > 100) {
		return cairn.Invalid("limit", "must be 1 to 100")
	}
	req.tree, err = parseFilter(req.Filter)
	return err
}

// filterMetadataJSON is what the filter builder offers.
type filterMetadataJSON struct {
	Fields []devicefilters.FieldInfo `json:"fields"`
	Sites  []devicefilters.Site      `json:"sites"`
	// MetadataFields are the labelled fields only, without the reserved
	// placeholders (3..10).
	MetadataFields []filterMetadataFieldJSON `json:"metadata_fields"`
}

type filterMetadataFieldJSON struct {
	FieldNumber int    `json:"field_number"`
	Description string `json:"description"`
}

func (s *Server) deviceFilterMetadata(r *http.Request) (filterMetadataJSON, error) {
	c, err := s.DeviceFilters.Catalog(r.Context(), principal(r.Context()).SiteScope())
	if err != nil {
		return filterMetadataJSON{}, err
	}
	defs, err := s.Metadata.Definitions(r.Context())
	if err != nil {
		return filterMetadataJSON{}, err
	}
	labelled := []filterMetadataFieldJSON{}
	for _, d := range defs {
		if d.Description != "" && !(d.Reserved && d.FieldNumber > 2) {
			labelled = append(labelled, filterMetadataFieldJSON{FieldNumber: d.FieldNumber, Description: d.Description})
		}
	}
	return filterMetadataJSON{Fields: c.Fields, Sites: c.Sites, MetadataFields: labelled}, nil
}

type filterListJSON struct {
	Filters []filterJSON `json:"filters"`
}

// filterPreviewJSON is the first devices a draft filter matches.
type filterPreviewJSON struct {
	Total   int64        `json:"total"`
	Devices []deviceJSON `json:"devices"`
}

// deviceRows are a page's rows in the GET /api/devices shape, with their
// sparse decoded metadata values (one query for the page).
func (s *Server) deviceRows(ctx context.Context, page devicefilters.Page) ([]deviceJSON, error) {
	list := s.Devices.FromFilterRows(page.Rows, page.Now)
	out := make([]deviceJSON, len(list))
	guids := make([]string, len(list))
	for i, d := range list {
		out[i], guids[i] = newDeviceJSON(d), string(d.GUID)
	}
	// Bare test servers run without the metadata service.
	values := map[string]map[string]string{}
	if s.Metadata != nil {
		var err error
		if values, err = s.Metadata.SparseValues(ctx, guids); err != nil {
			return nil, err
		}
	}
	for i := range out {
		if m := values[string(out[i].GUID)]; m != nil {
			out[i].MetadataFields = m
		}
	}
	return out, nil
}
