package devicefilters

import (
	"context"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// FieldInfo describes a filter field for the filter builder (GET
// /api/device_filters/metadata). ValueType is the field's main value
// type; OpValueTypes gives each op's (none: no value).
type FieldInfo struct {
	Field        string            `json:"field"`
	Label        string            `json:"label"`
	Group        string            `json:"group"`
	Ops          []string          `json:"ops"`
	ValueType    string            `json:"value_type" openapi:"enum=string|number|version|duration_seconds|time|cidr|site_ids|enum|none"`
	OpValueTypes map[string]string `json:"op_value_types"`
	KeyType      *string           `json:"key_type"`
	Values       []string          `json:"values"`
}

// Site is a site the caller may filter on.
type Site struct {
	ID   cairn.SiteID `json:"id"`
	Name string       `json:"name"`
}

// Catalog is the filter builder's metadata.
type Catalog struct {
	Fields []FieldInfo
	Sites  []Site
}

// Catalog lists the fields, their ops and value suggestions (enum values;
// the most common os and agent_version values inside scope), and the
// sites inside scope.
func (s *Service) Catalog(ctx context.Context, scope cairn.SiteScope) (Catalog, error) {
	out := Catalog{Fields: make([]FieldInfo, len(fields)), Sites: []Site{}}
	for i, f := range fields {
		info := FieldInfo{Field: f.name, Label: f.label, Group: f.group, Ops: f.ops, ValueType: f.valueType,
			OpValueTypes: map[string]string{}, Values: []string{}}
		for _, op := range f.ops {
			info.OpValueTypes[op] = opType(&fields[i], op)
		}
		if f.keyType != "" {
			kt := f.keyType
			info.KeyType = &kt
		}
		if f.enum != nil {
			info.Values = f.enum
		}
		if f.name == "os" || f.name == "agent_version" {
			vals, err := s.store.DeviceFilterSuggestions(ctx, db.DeviceFilterSuggestionsParams{ColumnName: f.name,
				AllSites: scope.All, SiteIds: scope.IDs()})
			if err != nil {
				return Catalog{}, err
			}
			info.Values = append(info.Values, vals...)
		}
		out.Fields[i] = info
	}
	sites, err := s.store.SiteList(ctx, db.SiteListParams{AllSites: scope.All, SiteIds: scope.IDs()})
	if err != nil {
		return Catalog{}, err
	}
	for _, st := range sites {
		out.Sites = append(out.Sites, Site{ID: st.ID, Name: st.Name})
	}
	return out, nil
}
