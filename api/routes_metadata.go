package api

import (
	"context"
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/metadata"
)

// metadataRoutes are the metadata fields (docs/api.md "Metadata fields"):
// definitions, per-device values, and the agent's read of one field.
func (s *Server) metadataRoutes() []Route {
	s.metadataCalls()
	return []Route{
		{"GET", "/api/metadata_fields", AuthToken, getAction(s, func(r *http.Request) (metadataDefinitionsJSON, error) {
			defs, err := s.Metadata.Definitions(r.Context())
			out := metadataDefinitionsJSON{Fields: make([]metadataDefinitionJSON, len(defs)), ValueMaxLength: metadata.ValueMaxLength}
			for i, d := range defs {
				out.Fields[i] = newMetadataDefinitionJSON(d)
			}
			return out, err
		}), "List metadata field definitions"},
		{"PUT", "/api/metadata_fields/{field_number}", AuthAdmin, jsonAction(s, http.StatusOK, false, func(r *http.Request, req metadataLabelRequest) (metadataDefinitionJSON, error) {
			n, err := metadata.CheckFieldNumber(pathParam(r, "field_number"))
			if err != nil {
				return metadataDefinitionJSON{}, err
			}
			d, err := s.Metadata.Rename(r.Context(), principal(r.Context()).Username, n, *req.Description)
			return newMetadataDefinitionJSON(d), err
		}).Errors(metadata.ECodeReservedField), "Label a metadata field"},
		{"GET", "/api/devices/{guid}/metadata_fields", AuthToken, getAction(s, func(r *http.Request) (metadataValueListJSON, error) {
			vals, err := s.Metadata.DeviceValues(r.Context(), principal(r.Context()).SiteScope(), cairn.DeviceGUID(pathParam(r, "guid")))
			out := make([]metadataValueJSON, len(vals))
			for i, v := range vals {
				out[i] = newMetadataValueJSON(v)
			}
			return metadataValueListJSON{Fields: out}, err
		}).Errors(cairn.ECodeNotFound), "List a device's metadata values"},
		{"PUT", "/api/devices/{guid}/metadata_fields/{field_number}", AuthToken, jsonAction(s, http.StatusOK, false, func(r *http.Request, req metadataValueRequest) (metadataValueJSON, error) {
			n, err := metadata.CheckFieldNumber(pathParam(r, "field_number"))
			if err != nil {
				return metadataValueJSON{}, err
			}
			p := principal(r.Context())
			v, err := s.Metadata.SetDeviceValue(r.Context(), p.SiteScope(), p.Username, cairn.DeviceGUID(pathParam(r, "guid")), n, *req.Value)
			return newMetadataValueJSON(v), err
		}).Errors(cairn.ECodeNotFound), "Set a device's metadata value"},
		{"GET", proto.PathAgentMetadataPrefix + "{field_number}", AuthDevice, getAction(s, func(r *http.Request) (proto.MetadataFieldValue, error) {
			n, err := metadata.CheckFieldNumber(pathParam(r, "field_number"))
			if err != nil {
				return proto.MetadataFieldValue{}, err
			}
			return s.agentMetadataValue(r.Context(), *deviceFrom(r.Context()), n)
		}), "Agent: read a metadata value"},
	}
}

// agentMetadataValue is the agent's read of field n, over REST or the
// realtime socket (proto.CallMetadataRead).
func (s *Server) agentMetadataValue(ctx context.Context, dev devicetrust.Identity, n int) (proto.MetadataFieldValue, error) {
	v, err := s.Metadata.AgentValue(ctx, dev.GUID, n)
	out := proto.MetadataFieldValue{FieldNumber: n, Value: v.Value, Source: v.Source}
	if v.ModifiedAt != nil {
		at := v.ModifiedAt.UTC().Format(time.RFC3339Nano)
		out.ModifiedAt = &at
	}
	return out, err
}

// metadataSync adds the metadata part to a heartbeat answer: acks for the
// writes it carried and, when operators changed the device's metadata
// since the agent's revision, the revision and the changed fields. A beat
// with nothing to do answers from memory (the flush's cached revision).
func (s *Server) metadataSync(ctx context.Context, guid cairn.DeviceGUID, hb proto.Heartbeat, resp proto.HeartbeatResponse) (proto.HeartbeatResponse, error) {
	cached := resp.MetadataRevision
	resp.MetadataRevision = 0
	if s.Metadata == nil || !metadata.NeedsSync(hb, cached) {
		return resp, nil
	}
	res, err := s.Metadata.AgentSync(ctx, guid, hb, cached)
	if err != nil {
		return resp, err
	}
	resp.MetadataFieldAcks, resp.MetadataRevision, resp.MetadataChangedFields = res.Acks, res.Revision, res.Changed
	return resp, nil
}

type metadataDefinitionsJSON struct {
	Fields         []metadataDefinitionJSON `json:"fields"`
	ValueMaxLength int                      `json:"value_max_length"`
}

type metadataDefinitionJSON struct {
	FieldNumber      int        `json:"field_number"`
	Description      string     `json:"description"`
	Reserved         bool       `json:"reserved"`
	LinkedAssemblyID *int64     `json:"linked_assembly_id"`
	UpdatedAt        *time.Time `json:"updated_at"`
	UpdatedBy        string     `json:"updated_by"`
}

func newMetadataDefinitionJSON(d metadata.Definition) metadataDefinitionJSON {
	return metadataDefinitionJSON{FieldNumber: d.FieldNumber, Description: d.Description, Reserved: d.Reserved,
		LinkedAssemblyID: d.LinkedAssemblyID, UpdatedAt: d.UpdatedAt, UpdatedBy: d.UpdatedBy}
}

type metadataValueJSON struct {
	FieldNumber int        `json:"field_number"`
	Description string     `json:"description"`
	Value       string     `json:"value"`
	ModifiedAt  *time.Time `json:"modified_at"`
	Source      string     `json:"source"`
}

func newMetadataValueJSON(v metadata.Value) metadataValueJSON {
	return metadataValueJSON{FieldNumber: v.FieldNumber, Description: v.Description, Value: v.Value, ModifiedAt: v.ModifiedAt, Source: v.Source}
}

type metadataLabelRequest struct {
	Description *string `json:"description" limit:"max=120"`
}

func (req *metadataLabelRequest) validate() error {
	if req.Description == nil {
		return cairn.Invalid("description", "is required (an empty string clears the label)")
	}
	return nil
}

type metadataValueRequest struct {
	Value *string `json:"value"`
}

func (req *metadataValueRequest) validate() error {
	if req.Value == nil {
		return cairn.Invalid("value", "is required (an empty string clears the value)")
	}
	return nil
}

// metadataValueListJSON is a device's metadata fields, every field number.
type metadataValueListJSON struct {
	Fields []metadataValueJSON `json:"fields"`
}
