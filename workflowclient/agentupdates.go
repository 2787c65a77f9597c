package workflowclient

import (
	"context"
	"encoding/json"
	"time"

	"github.com/cairn-rmm/cairn"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentupdates"
	"github.com/cairn-rmm/cairn/internal/grants"
	"github.com/cairn-rmm/cairn/workflows"
)

// AgentUpdateStarter starts update workflows and tells them of progress.
type AgentUpdateStarter struct {
	Client   client.Client
	Deadline time.Duration
	// Grants signs the request: operators' requests are authorised by the
	// API, scheduled ones by the job an admin saved (PostgreSQL).
	Grants Granter
}

// Start starts the update of one device on its site's queue.
func (s AgentUpdateStarter) Start(ctx context.Context, p agentupdates.Planned) error {
	raw, err := json.Marshal(p.Request)
	if err != nil {
		return err
	}
	deadline := s.Deadline
	if deadline <= 0 {
		deadline = workflows.DefaultAgentUpdateDeadline
	}
	limit := deadline + 30*time.Minute
	if p.LaneHolder != "" {
		limit += workflows.SlotLease // it may wait that long for a slot
	}
	grant, err := s.Grants.Sign(ctx, grants.Operation{GUID: p.Target.GUID, OperationID: p.OperationID, Type: proto.EventAgentUpdate,
		Payload: raw}, limit)
	if err != nil {
		return err
	}
	_, err = Start(ctx, s.Client, client.StartWorkflowOptions{
		ID:                       workflows.AgentUpdateWorkflowID(p.Target.GUID, p.OperationID),
		TaskQueue:                workflows.SiteTaskQueue(p.Target.SiteSlug),
		WorkflowExecutionTimeout: limit,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes:    deviceAttrs(string(p.Target.GUID), p.Target.SiteSlug, workflows.JobKindAgentUpdate),
	}, workflows.AgentUpdate, workflows.AgentUpdateInput{OperationID: p.OperationID, Target: p.Target, ToBuildID: p.Request.BuildID,
		Payload: raw, Deadline: deadline, RunID: p.RunID, LaneHolder: p.LaneHolder, Grant: grant})
	return err
}

// Progress tells the update that its agent posted progress, with the
// status the route recorded. An update that no longer runs (or an hourly
// one, which has no workflow) is fine.
func (s AgentUpdateStarter) Progress(ctx context.Context, guid, operationID, status string) error {
	return Signal(ctx, s.Client, workflows.AgentUpdateWorkflowID(cairn.DeviceGUID(guid), cairn.OperationID(operationID)), workflows.SignalAgentUpdateProgress,
		workflows.AgentUpdateProgress{Status: status})
}
