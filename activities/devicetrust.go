package activities

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/cairn-rmm/cairn"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/events"
)

// DeviceTrust carries out what follows a trust action (SPEC "Device trust
// state") once the state change is committed: the agent's socket ends,
// the device's activity history records the operator's action, and
// consoles refresh.
type DeviceTrust struct {
	// Sockets is the agent socket hub, which drops a socket wherever it
	// is; nil when the process has no hub.
	Sockets SocketDropper
	// Activity is *devices.Service.
	Activity ActivityRecorder
	// Events is *events.Bus.
	Events EventPublisher
}

// SocketDropper closes a device's realtime socket, on whichever replica
// holds it; no socket is not an error.
type SocketDropper interface {
	Drop(ctx context.Context, guid, reason string) error
}

// ActivityRecorder adds a row to a device's activity history.
type ActivityRecorder interface {
	RecordActivity(ctx context.Context, a devices.NewActivity) (devices.Activity, error)
}

// EventPublisher publishes an operator event.
type EventPublisher interface {
	Publish(ctx context.Context, e events.Event) error
}

// TrustActionInput is a committed trust action: the device as it is after
// it, and who did it.
type TrustActionInput struct {
	GUID         cairn.DeviceGUID
	Hostname     string
	SiteID       cairn.SiteID
	SiteSlug     string
	Action       string // devicetrust.Action*
	TrustState   string // after the action; "purged" after a purge
	TokenVersion int32
	Actor        string
}

// DropSocket ends the device's socket, and with it every remote path.
func (d *DeviceTrust) DropSocket(ctx context.Context, in TrustActionInput) error {
	if isNil(d.Sockets) {
		activity.GetLogger(ctx).Warn("no socket hub in this process; socket not dropped", "guid", in.GUID)
		return nil
	}
	return d.Sockets.Drop(ctx, string(in.GUID), "device "+in.TrustState)
}

// RecordTrustActivity adds the action to the device's activity history
// with the operator's name. A purged device's row is gone, so its history
// stays by hostname only.
func (d *DeviceTrust) RecordTrustActivity(ctx context.Context, in TrustActionInput) error {
	guid := in.GUID
	if in.Action == devicetrust.ActionPurge {
		guid = ""
	}
	row := devices.NewActivity{GUID: guid, Hostname: in.Hostname, SiteID: in.SiteID,
		Kind: "device_" + in.Action, Summary: trustSummary[in.Action] + " by " + in.Actor, Actor: in.Actor,
		Metadata: map[string]any{"trust_state": in.TrustState, "token_version": in.TokenVersion}}
	_, err := d.Activity.RecordActivity(ctx, row)
	if db.IsForeignKeyViolation(err) {
		// Purged since the action (a revoke then a purge in quick
		// succession): the history stays by hostname.
		row.GUID = ""
		_, err = d.Activity.RecordActivity(ctx, row)
	}
	return err
}

// PublishTrustChange tells consoles that may see the device's site.
func (d *DeviceTrust) PublishTrustChange(ctx context.Context, in TrustActionInput) error {
	data, err := json.Marshal(map[string]any{"guid": in.GUID, "hostname": in.Hostname, "site_id": in.SiteID, "trust_state": in.TrustState})
	if err != nil {
		return err
	}
	return d.Events.Publish(ctx, events.Event{ID: uuid.NewString(), Type: events.TypeAgentStatusChanged, SiteID: in.SiteID, Data: data})
}

var trustSummary = map[string]string{
	devicetrust.ActionQuarantine:   "Quarantined",
	devicetrust.ActionUnquarantine: "Released from quarantine",
	devicetrust.ActionRevoke:       "Trust revoked",
	devicetrust.ActionPurge:        "Purged",
}

// isNil is true for a nil interface and for one holding a nil pointer (a
// *Hub variable that was never set).
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
