package workflowclient

import (
	"cmp"
	"context"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn/workflows"
)

// ClusterAdmissions starts the admission of a process joining the cluster
// and hands it an administrator's decision.
type ClusterAdmissions struct {
	Client client.Client
	// TaskQueue is EngineTaskQueue when empty.
	TaskQueue string
}

// Start starts cluster-admission:<id>, which waits until expiresAt.
func (c ClusterAdmissions) Start(ctx context.Context, id string, expiresAt time.Time) (string, error) {
	wid := workflows.ClusterAdmissionWorkflowID(id)
	_, err := Start(ctx, c.Client, client.StartWorkflowOptions{
		ID:                    wid,
		TaskQueue:             cmp.Or(c.TaskQueue, workflows.EngineTaskQueue),
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: jobKindAttr(workflows.JobKindClusterAdmission),
	}, workflows.ClusterAdmission, workflows.ClusterAdmissionInput{AdmissionID: id, ExpiresAt: expiresAt})
	return wid, err
}

// Decide signals an administrator's decision (approve or cancel).
func (c ClusterAdmissions) Decide(ctx context.Context, id string, d workflows.ClusterDecision) (string, error) {
	wid := workflows.ClusterAdmissionWorkflowID(id)
	return wid, Signal(ctx, c.Client, wid, workflows.SignalClusterDecision, d)
}
