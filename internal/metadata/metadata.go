// Package metadata is the metadata fields domain (SPEC "Metadata field
// definition and value"): 500 global definitions with labels (1..10
// reserved constants), per-device values stored base64 with modified_at
// and source, the conflict rule between agent and operator writes, and the
// agent sync (heartbeat writes and acks, operator edits read back by the
// agent; docs/agent.md "Metadata sync").
package metadata

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/events"
)

// Limits.
const (
	FieldMin       = proto.MetadataFieldMin
	FieldMax       = proto.MetadataFieldMax
	ValueMaxLength = proto.MetadataValueMax
	ReservedMax    = 10
	DescriptionMax = 120
)

// ECodeReservedField: renaming a reserved definition (1..10).
const ECodeReservedField = "reserved_metadata_field"

// Sources of a value.
const (
	SourceAgent          = "agent"
	SourceOperatorPrefix = "operator:"
)

// reserved are the constant definitions (SPEC table).
func reservedDescription(n int) (string, bool) {
	switch {
	case n == 1:
		return "Server Roles", true
	case n == 2:
		return "Bitlocker Drive Encryption", true
	case n >= 3 && n <= ReservedMax:
		return "Reserved", true
	}
	return "", false
}

// Reserved reports whether field n is a reserved constant.
func Reserved(n int) bool { _, ok := reservedDescription(n); return ok }

// Definition is one of the 500 field definitions.
type Definition struct {
	FieldNumber      int
	Description      string
	Reserved         bool
	LinkedAssemblyID *int64
	UpdatedAt        *time.Time
	UpdatedBy        string
}

// Value is one device's value of one field; a field never written has a
// nil ModifiedAt and an empty Source.
type Value struct {
	FieldNumber int
	Description string
	Value       string
	ModifiedAt  *time.Time
	Source      string
}

// Service implements metadata fields.
type Service struct {
	store   *db.Store
	bus     devices.Publisher
	devices *devices.Service
	now     func() time.Time
	log     *slog.Logger
}

// New returns the service. dev records activity rows and learns of
// operator edits for its heartbeat answers; bus tells open consoles.
func New(store *db.Store, bus devices.Publisher, dev *devices.Service, now func() time.Time, log *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, bus: bus, devices: dev, now: now, log: log}
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// CheckFieldNumber validates a field number from a path.
func CheckFieldNumber(raw string) (int, error) {
	n, err := strconv.Atoi(raw)
	if err != nil || n < FieldMin || n > FieldMax {
		return 0, cairn.Invalid("field_number", fmt.Sprintf("must be an integer from %d to %d", FieldMin, FieldMax))
	}
	return n, nil
}

// Definitions returns the 500 definitions in order. Stored descriptions of
// reserved numbers are ignored.
func (s *Service) Definitions(ctx context.Context) ([]Definition, error) {
	rows, err := s.store.MetadataDefinitionList(ctx)
	if err != nil {
		return nil, err
	}
	linked, err := s.linkedAssemblies(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Definition, FieldMax)
	for i := range out {
		n := i + 1
		out[i] = Definition{FieldNumber: n}
		if d, ok := reservedDescription(n); ok {
			out[i].Description, out[i].Reserved = d, true
			out[i].LinkedAssemblyID = linked[n]
		}
	}
	for _, r := range rows {
		n := int(r.FieldNumber)
		if n < FieldMin || n > FieldMax || Reserved(n) {
			continue
		}
		at := r.UpdatedAt.UTC()
		out[n-1].Description, out[n-1].UpdatedAt, out[n-1].UpdatedBy = r.Description, &at, r.UpdatedBy
	}
	return out, nil
}

// Rename sets the label of a non-reserved field (trimmed, at most
// DescriptionMax characters, one line; empty clears it).
func (s *Service) Rename(ctx context.Context, actor string, n int, description string) (Definition, error) {
	if n < FieldMin || n > FieldMax {
		return Definition{}, cairn.Invalid("field_number", fmt.Sprintf("must be an integer from %d to %d", FieldMin, FieldMax))
	}
	if Reserved(n) {
		return Definition{}, cairn.Errorf(ECodeReservedField, "metadata field %d is reserved; its description cannot change", n)
	}
	description = strings.TrimSpace(description)
	switch {
	case len([]rune(description)) > DescriptionMax:
		return Definition{}, cairn.Invalid("description", fmt.Sprintf("must be at most %d characters", DescriptionMax))
	case strings.ContainsFunc(description, unicode.IsControl):
		return Definition{}, cairn.Invalid("description", "must be one line without control characters")
	}
	r, err := s.store.MetadataDefinitionUpsert(ctx, db.MetadataDefinitionUpsertParams{FieldNumber: int32(n),
		Description: description, UpdatedAt: s.clock(), UpdatedBy: actor})
	if err != nil {
		return Definition{}, err
	}
	at := r.UpdatedAt.UTC()
	return Definition{FieldNumber: n, Description: r.Description, UpdatedAt: &at, UpdatedBy: r.UpdatedBy}, nil
}

// descriptions maps field number to its label (reserved constants included).
func (s *Service) descriptions(ctx context.Context) ([]string, error) {
	defs, err := s.Definitions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, FieldMax+1)
	for _, d := range defs {
		out[d.FieldNumber] = d.Description
	}
	return out, nil
}

func encode(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) }

func decode(b64 string) string {
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return ""
	}
	return string(b)
}

// DeviceValues returns the 500 rows of a device inside scope.
func (s *Service) DeviceValues(ctx context.Context, scope cairn.SiteScope, guid cairn.DeviceGUID) ([]Value, error) {
	if _, err := s.deviceInScope(ctx, scope, guid); err != nil {
		return nil, err
	}
	labels, err := s.descriptions(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.MetadataValueList(ctx, guid)
	if err != nil {
		return nil, err
	}
	out := make([]Value, FieldMax)
	for i := range out {
		out[i] = Value{FieldNumber: i + 1, Description: labels[i+1]}
	}
	for _, r := range rows {
		n := int(r.FieldNumber)
		at := r.ModifiedAt.UTC()
		out[n-1].Value, out[n-1].ModifiedAt, out[n-1].Source = decode(r.ValueB64), &at, r.Source
	}
	return out, nil
}

func (s *Service) deviceInScope(ctx context.Context, scope cairn.SiteScope, guid cairn.DeviceGUID) (db.MetadataDeviceInScopeRow, error) {
	if guid == "" || len(guid) > devices.MaxGUID {
		return db.MetadataDeviceInScopeRow{}, cairn.Invalid("guid", fmt.Sprintf("must be 1 to %d characters", devices.MaxGUID))
	}
	d, err := s.store.MetadataDeviceInScope(ctx, db.MetadataDeviceInScopeParams{Guid: guid, AllSites: scope.All, SiteIds: scope.IDs()})
	return d, db.NotFound(err, "device not found")
}

// SetDeviceValue is an operator's write of field n of a device inside
// scope (blank clears). It is stamped with the Engine's now; should the
// stored value carry a later time (another replica's clock ran ahead) the
// operator's write is stamped just after it, so the edit always takes
// effect and an older agent write still loses against it. It bumps the
// device's metadata revision, records an activity row and tells consoles.
func (s *Service) SetDeviceValue(ctx context.Context, scope cairn.SiteScope, actor string, guid cairn.DeviceGUID, n int, value string) (Value, error) {
	value, p := proto.NormalizeMetadataValue(value)
	if p != "" {
		return Value{}, cairn.Invalid("value", p)
	}
	dev, err := s.deviceInScope(ctx, scope, guid)
	if err != nil {
		return Value{}, err
	}
	at := s.clock()
	source := SourceOperatorPrefix + actor
	var (
		revision int64
		previous string
	)
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		if _, err := q.MetadataDeviceLock(ctx, guid); err != nil {
			return db.NotFound(err, "device not found")
		}
		cur, err := q.MetadataValueGetForUpdate(ctx, db.MetadataValueGetForUpdateParams{DeviceGuid: guid, FieldNumber: int32(n)})
		switch {
		case err == nil:
			previous = decode(cur.ValueB64)
			if !at.After(cur.ModifiedAt) {
				at = cur.ModifiedAt.UTC().Add(time.Microsecond)
			}
		case !db.IsNoRows(err):
			return err
		}
		if revision, err = q.MetadataRevisionBump(ctx, guid); err != nil {
			return err
		}
		return q.MetadataValuePut(ctx, db.MetadataValuePutParams{DeviceGuid: guid, FieldNumber: int32(n), ValueB64: encode(value),
			ModifiedAt: at, Source: source, Revision: revision})
	})
	if err != nil {
		return Value{}, err
	}
	s.devices.MetadataChanged(guid, revision)
	labels, err := s.descriptions(ctx)
	if err != nil {
		return Value{}, err
	}
	name := fmt.Sprintf("Metadata field %d", n)
	if labels[n] != "" {
		name += " (" + labels[n] + ")"
	}
	summary := name + " set"
	if value == "" {
		summary = name + " cleared"
	}
	if _, err := s.devices.RecordActivity(context.WithoutCancel(ctx), devices.NewActivity{GUID: guid, Hostname: dev.Hostname,
		SiteID: dev.SiteID, Kind: "metadata_field_changed", Summary: summary, Actor: actor,
		Metadata: map[string]any{"field_number": n, "cleared": value == "", "previous_set": previous != ""}}); err != nil {
		s.log.WarnContext(ctx, "record metadata activity", "guid", guid, "err", err)
	}
	s.publish(ctx, dev)
	return Value{FieldNumber: n, Description: labels[n], Value: value, ModifiedAt: &at, Source: source}, nil
}

// publish tells consoles that may see the device that its metadata
// changed: device_inventory_changed with parts ["metadata_fields"] (the
// console refetches device lists and the device page on it).
func (s *Service) publish(ctx context.Context, dev db.MetadataDeviceInScopeRow) {
	data := fmt.Appendf(nil, `{"guid":%q,"hostname":%q,"site_id":%d,"parts":["metadata_fields"]}`, dev.Guid, dev.Hostname, dev.SiteID)
	if err := s.bus.Publish(context.WithoutCancel(ctx), events.Event{ID: uuid.NewString(), Type: events.TypeDeviceInventoryChanged,
		SiteID: dev.SiteID, Data: data}); err != nil {
		s.log.WarnContext(ctx, "publish metadata change", "guid", dev.Guid, "err", err)
	}
}

// AgentValue is the Engine's value of field n of the calling device.
func (s *Service) AgentValue(ctx context.Context, guid cairn.DeviceGUID, n int) (Value, error) {
	r, err := s.store.MetadataValueGet(ctx, db.MetadataValueGetParams{DeviceGuid: guid, FieldNumber: int32(n)})
	if db.IsNoRows(err) {
		return Value{FieldNumber: n}, nil
	}
	if err != nil {
		return Value{}, err
	}
	at := r.ModifiedAt.UTC()
	return Value{FieldNumber: n, Value: decode(r.ValueB64), ModifiedAt: &at, Source: r.Source}, nil
}

// SparseValues returns the set (non-empty) values of the given devices,
// decoded, keyed by GUID then field number as a string: one query for a
// page of devices. Devices without values are absent.
func (s *Service) SparseValues(ctx context.Context, guids []string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	if len(guids) == 0 {
		return out, nil
	}
	rows, err := s.store.MetadataSparseValues(ctx, guids)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		m := out[string(r.DeviceGuid)]
		if m == nil {
			m = map[string]string{}
			out[string(r.DeviceGuid)] = m
		}
		m[strconv.Itoa(int(r.FieldNumber))] = decode(r.ValueB64)
	}
	return out, nil
}
