package activities

import (
	"context"

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

// BeginOperation records the operation as running and returns the row's ID.
func (o *Operations) BeginOperation(ctx context.Context, in OperationRecord) (int64, error) {
	id, err := o.Devices.OperationStarted(ctx, in.Target, in.Kind, in.Summary, in.Actor, in.Meta)
	return id, ApplicationError(err)
}

// ApplyInput is an agent's answer to store.
type ApplyInput struct {
	GUID    string
	Type    string
	Payload []byte
}

// ApplyAgentAnswer stores what the answer changes and returns a summary of it.
func (o *Operations) ApplyAgentAnswer(ctx context.Context, in ApplyInput) (string, error) {
	s, err := o.Devices.ApplyReply(ctx, in.GUID, in.Type, in.Payload)
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
