package activities

import (
	"context"

	"github.com/cairn-rmm/cairn"

	"github.com/cairn-rmm/cairn/internal/devices"
)

// Operations records remote operations in the device's activity history
// and applies what agents answer to the stored inventory.
type Operations struct {
	Devices *devices.Service
}

// OperationRecord opens an operation's activity row.
type OperationRecord struct {
	Target  devices.OperationTarget
	Kind    string
	Summary string
	Actor   string
	Meta    map[string]any
}

// BeginOperation records the operation as running and returns the row's
// ID. The row is keyed by the operation (OperationKey), so a retry after
// the first try committed (a local activity is retried when its result
// did not reach the workflow) returns the same row instead of a second
// one left running for ever.
func (o *Operations) BeginOperation(ctx context.Context, in OperationRecord) (int64, error) {
	id, err := o.Devices.OperationStarted(ctx, in.Target, OperationKey(in.Meta), in.Kind, in.Summary, in.Actor, in.Meta)
	return id, ApplicationError(err)
}

// OperationKey is the activity row key of an operation recorded with
// meta: its operation_id, or "transfer:" and its transfer_id for a file
// transfer ("" when it names neither: the row is not keyed). The
// workflows that call BeginOperation put these in the metadata, as they
// did before the key existed, so runs started by older code are keyed
// alike.
func OperationKey(meta map[string]any) string {
	if id := metaString(meta["operation_id"]); id != "" {
		return id
	}
	if id := metaString(meta["transfer_id"]); id != "" {
		return "transfer:" + id
	}
	return ""
}

// metaString reads an ID from operation metadata: a string once the
// metadata crossed a Temporal payload, the typed ID when built in this
// process.
func metaString(v any) string {
	switch id := v.(type) {
	case string:
		return id
	case cairn.OperationID:
		return string(id)
	case cairn.TransferID:
		return string(id)
	}
	return ""
}

// ApplyInput is an agent's answer to store.
type ApplyInput struct {
	GUID    cairn.DeviceGUID
	Type    string
	Payload []byte
}

// ApplyAgentAnswer stores what the answer changes and returns a summary of it.
func (o *Operations) ApplyAgentAnswer(ctx context.Context, in ApplyInput) (string, error) {
	s, err := o.Devices.ApplyReply(ctx, string(in.GUID), in.Type, in.Payload)
	return s, ApplicationError(err)
}

// FinishInput closes an operation's activity row.
type FinishInput struct {
	ActivityID int64
	Status     string
	Summary    string
	Meta       map[string]any
}

// FinishOperation records the outcome.
func (o *Operations) FinishOperation(ctx context.Context, in FinishInput) error {
	return ApplicationError(o.Devices.OperationFinished(ctx, in.ActivityID, in.Status, in.Summary, in.Meta))
}
