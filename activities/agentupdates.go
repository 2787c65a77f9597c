package activities

import (
	"context"

	"github.com/cairn-rmm/cairn"

	"github.com/cairn-rmm/cairn/internal/agentupdates"
)

// AgentUpdates records agent updates for the AgentUpdate workflow.
type AgentUpdates struct {
	Updates *agentupdates.Service
}

// BeginAgentUpdate marks the update running and opens its activity row.
func (a *AgentUpdates) BeginAgentUpdate(ctx context.Context, operationID cairn.OperationID) error {
	return ApplicationError(a.Updates.Begin(ctx, operationID))
}

// AgentUpdateStatus is the update's recorded status (agents' progress
// posts move it).
func (a *AgentUpdates) AgentUpdateStatus(ctx context.Context, operationID cairn.OperationID) (string, error) {
	s, err := a.Updates.Status(ctx, operationID)
	return s, ApplicationError(err)
}

// FinishAgentUpdateInput ends an update.
type FinishAgentUpdateInput struct {
	OperationID cairn.OperationID
	Status      string
	Summary     string
}

// FinishAgentUpdate ends the update unless it already ended, and returns
// the status it has.
func (a *AgentUpdates) FinishAgentUpdate(ctx context.Context, in FinishAgentUpdateInput) (string, error) {
	s, err := a.Updates.Finish(ctx, string(in.OperationID), in.Status, in.Summary, "")
	return s, ApplicationError(err)
}
