package workflowclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/workflows"
)

// ServiceActions starts the Server page's service actions and reads their
// outcome back from Temporal (no table keeps them: the workflow is the
// record, for the namespace's retention).
type ServiceActions struct {
	Client    client.Client
	Namespace string
	// TaskQueue is EngineTaskQueue when empty.
	TaskQueue string
}

// ServiceActionView is one action as the Server page shows it.
type ServiceActionView struct {
	ActionID   string                         `json:"action_id"`
	WorkflowID string                         `json:"workflow_id"`
	Service    string                         `json:"service_key"`
	Action     string                         `json:"action"`
	Status     string                         `json:"status" openapi:"enum=running|succeeded|failed"`
	StartedAt  time.Time                      `json:"started_at"`
	ClosedAt   *time.Time                     `json:"closed_at,omitempty"`
	Result     *workflows.ServiceActionResult `json:"result,omitempty"`
	Error      string                         `json:"error,omitempty"`
}

// Start queues the action; its ID is in.ID.
func (s ServiceActions) Start(ctx context.Context, in workflows.ServiceActionInput) (ServiceActionView, error) {
	wid := workflows.ServiceActionWorkflowID(in.Action, in.ID)
	_, err := Start(ctx, s.Client, client.StartWorkflowOptions{
		ID:                       wid,
		TaskQueue:                cmp.Or(s.TaskQueue, workflows.EngineTaskQueue),
		WorkflowExecutionTimeout: 15 * time.Minute,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes:    jobKindAttr(workflows.JobKindServiceAction),
	}, workflows.ServiceAction, in)
	if err != nil {
		return ServiceActionView{}, err
	}
	return ServiceActionView{ActionID: in.ID, WorkflowID: wid, Service: in.Action.Service, Action: in.Action.Action, Status: "running",
		StartedAt: time.Now().UTC()}, nil
}

// List returns the newest limit actions, newest first.
func (s ServiceActions) List(ctx context.Context, limit int) ([]ServiceActionView, error) {
	resp, err := s.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: s.Namespace, PageSize: int32(limit),
		Query: fmt.Sprintf("%s = '%s'", workflows.SearchAttrJobKind, workflows.JobKindServiceAction),
	})
	if err != nil {
		return nil, err
	}
	out := []ServiceActionView{}
	for _, e := range resp.GetExecutions() {
		if len(out) == limit {
			break
		}
		service, action, id, ok := workflows.ParseServiceActionWorkflowID(e.GetExecution().GetWorkflowId())
		if !ok {
			continue
		}
		v := ServiceActionView{ActionID: id, WorkflowID: e.GetExecution().GetWorkflowId(), Service: service, Action: action,
			StartedAt: e.GetStartTime().AsTime().UTC()}
		s.outcome(ctx, &v, e.GetStatus(), e.GetExecution().GetRunId(), e.GetCloseTime().AsTime())
		out = append(out, v)
	}
	return out, nil
}

// Get returns one action by its workflow ID.
func (s ServiceActions) Get(ctx context.Context, wid string) (ServiceActionView, error) {
	service, action, id, ok := workflows.ParseServiceActionWorkflowID(wid)
	if !ok {
		return ServiceActionView{}, cairn.Errorf(cairn.ECodeNotFound, "no such service action")
	}
	d, err := s.Client.DescribeWorkflowExecution(ctx, wid, "")
	if err != nil {
		return ServiceActionView{}, cairn.Wrap(err, cairn.ECodeNotFound, "no such service action")
	}
	info := d.GetWorkflowExecutionInfo()
	v := ServiceActionView{ActionID: id, WorkflowID: wid, Service: service, Action: action, StartedAt: info.GetStartTime().AsTime().UTC()}
	s.outcome(ctx, &v, info.GetStatus(), info.GetExecution().GetRunId(), info.GetCloseTime().AsTime())
	return v, nil
}

// outcome fills the status and, once closed, the result or the error.
func (s ServiceActions) outcome(ctx context.Context, v *ServiceActionView, st enums.WorkflowExecutionStatus, runID string, closed time.Time) {
	if st == enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		v.Status = "running"
		return
	}
	c := closed.UTC()
	v.ClosedAt = &c
	var res workflows.ServiceActionResult
	err := s.Client.GetWorkflow(ctx, v.WorkflowID, runID).Get(ctx, &res)
	if err != nil {
		v.Status = "failed"
		v.Error = err.Error()
		var app *temporal.ApplicationError
		if errors.As(err, &app) {
			v.Error = app.Message()
		}
		return
	}
	v.Status, v.Result = "succeeded", &res
}
