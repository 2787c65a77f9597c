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
		{"GET", "/api/device_filters", AuthToken, getAction(s, func(r *http.Request) (map[string][]filterJSON, error) {
			list, err := s.DeviceFilters.List(r.Context())
			return map[string][]filterJSON{"filters": toFilterJSONs(list)}, err
		})},
		{"POST", "/api/device_filters", AuthToken, jsonAction(s, http.StatusCreated, false, func(r *http.Request, req filterRequest) (filterJSON, error) {
			f, err := s.DeviceFilters.Create(r.Context(), principal(r.Context()).Username, req.input())
			return toFilterJSON(f), err
		})},
		{"GET", "/api/device_filters/metadata", AuthToken, getAction(s, s.deviceFilterMetadata)},
		{"GET", "/api/device_filters/search", AuthToken, getAction(s, func(r *http.Request) (map[string][]filterJSON, error) {
			limit, err := queryInt(r, "limit", devicefilters.DefaultSearch, 1, devicefilters.MaxSearch)
			if err != nil {
				return nil, err
			}
			list, err := s.DeviceFilters.Search(r.Context(), r.URL.Query().Get("q"), limit)
			return map[string][]filterJSON{"filters": toFilterJSONs(list)}, err
		}).Query(queryInteger("limit", "filters to return"), queryString("q", "a search in filter names"))},
		{"POST", "/api/device_filters/preview", AuthToken, jsonAction(s, http.StatusOK, false, func(r *http.Request, req filterPreviewRequest) (map[string]any, error) {
			limit := 25
			if req.Limit != nil {
				limit = *req.Limit
			}
			page, err := s.DeviceFilters.Page(r.Context(), principal(r.Context()).SiteScope(), devicefilters.PageQuery{
				Filters: []devicefilters.Node{req.tree}, Sort: devicefilters.Sort{Column: "hostname"}, Limit: limit})
			if err != nil {
				return nil, err
			}
			rows, err := s.deviceRows(r.Context(), page)
			return map[string]any{"total": page.Total, "devices": rows}, err
		})},
		{"GET", "/api/device_filters/{id}", AuthToken, getAction(s, func(r *http.Request) (filterJSON, error) {
			id, err := filterID(r)
			if err != nil {
				return filterJSON{}, err
			}
			f, err := s.DeviceFilters.Get(r.Context(), id)
			return toFilterJSON(f), err
		})},
		{"PUT", "/api/device_filters/{id}", AuthToken, jsonAction(s, http.StatusOK, false, func(r *http.Request, req filterRequest) (filterJSON, error) {
			id, err := filterID(r)
			if err != nil {
				return filterJSON{}, err
			}
			f, err := s.DeviceFilters.Update(r.Context(), principal(r.Context()).Username, id, req.input())
			return toFilterJSON(f), err
		})},
		{"DELETE", "/api/device_filters/{id}", AuthToken, jsonAction(s, http.StatusNoContent, true, func(r *http.Request, _ struct{}) (struct{}, error) {
			id, err := filterID(r)
			if err != nil {
				return struct{}{}, err
			}
			return struct{}{}, s.DeviceFilters.Delete(r.Context(), id)
		})},
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
	CreatedBy   string             `json:"created_by"`
	CreatedAt   time.Time          `json:"created_at"`
	UpdatedBy   string             `json:"updated_by"`
	UpdatedAt   time.Time          `json:"updated_at"`
}

func toFilterJSON(f devicefilters.Filter) filterJSON {
	return filterJSON{ID: f.ID, Name: f.Name, Description: f.Description, Filter: f.Tree, CreatedBy: f.CreatedBy, CreatedAt: f.CreatedAt,
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
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Filter      json.RawMessage `json:"filter"`
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
	Filter json.RawMessage `json:"filter"`
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

func (s *Server) deviceFilterMetadata(r *http.Request) (map[string]any, error) {
	c, err := s.DeviceFilters.Catalog(r.Context(), principal(r.Context()).SiteScope())
	if err != nil {
		return nil, err
	}
	defs, err := s.Metadata.Definitions(r.Context())
	if err != nil {
		return nil, err
	}
	// Labelled fields only, without the reserved placeholders (3..10).
	type metadataField struct {
		FieldNumber int    `json:"field_number"`
		Description string `json:"description"`
	}
	labelled := []metadataField{}
	for _, d := range defs {
		if d.Description != "" && !(d.Reserved && d.FieldNumber > 2) {
			labelled = append(labelled, metadataField{FieldNumber: d.FieldNumber, Description: d.Description})
		}
	}
	return map[string]any{"fields": c.Fields, "sites": c.Sites, "metadata_fields": labelled}, nil
}

// deviceRows are a page's rows in the GET /api/devices shape, with their
// sparse decoded metadata values (one query for the page).
func (s *Server) deviceRows(ctx context.Context, page devicefilters.Page) ([]deviceJSON, error) {
	list := s.Devices.FromFilterRows(page.Rows, page.Now)
	out := make([]deviceJSON, len(list))
	guids := make([]string, len(list))
	for i, d := range list {
		out[i], guids[i] = newDeviceJSON(d), d.GUID
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
		if m := values[out[i].GUID]; m != nil {
			out[i].MetadataFields = m
		}
	}
	return out, nil
}
