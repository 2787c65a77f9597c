package workers

import (
	"context"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// QueueInfo is what Temporal knows of a task queue.
type QueueInfo struct {
	Pollers []Poller
	// Live is true when some worker polled within the last minute.
	Live bool
	// RecentWorkflows counts workflows started on the queue since the
	// asked time (nil when visibility could not answer).
	RecentWorkflows *int64
	// RunningWorkflows counts the queue's workflows running now (nil
	// when visibility could not answer).
	RunningWorkflows *int64
	// Recent are the queue's newest workflows (at most RecentLimit).
	Recent []WorkflowSummary
}

// RecentLimit bounds QueueInfo.Recent.
const RecentLimit = 5

// WorkflowSummary is one workflow of a queue, as visibility lists it.
type WorkflowSummary struct {
	WorkflowID string
	RunID      string
	Type       string
	Status     string
	StartTime  time.Time
}

// Poller is one worker seen polling.
type Poller struct {
	Identity   string
	LastAccess time.Time
}

// Describe asks Temporal who polls queue and how much ran on it since.
func Describe(ctx context.Context, c client.Client, namespace, queue string, since time.Time) (QueueInfo, error) {
	resp, err := c.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
		Namespace:     namespace,
		TaskQueue:     &taskqueuepb.TaskQueue{Name: queue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL},
		TaskQueueType: enumspb.TASK_QUEUE_TYPE_WORKFLOW,
	})
	if err != nil {
		return QueueInfo{}, err
	}
	var info QueueInfo
	for _, p := range resp.GetPollers() {
		t := p.GetLastAccessTime().AsTime()
		info.Pollers = append(info.Pollers, Poller{Identity: p.GetIdentity(), LastAccess: t})
		if time.Since(t) < time.Minute {
			info.Live = true
		}
	}
	count, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
		Namespace: namespace,
		Query:     fmt.Sprintf("TaskQueue = '%s' AND StartTime > '%s'", queue, since.UTC().Format(time.RFC3339)),
	})
	if err == nil {
		n := count.GetCount()
		info.RecentWorkflows = &n
	}
	running, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
		Namespace: namespace,
		Query:     fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Running'", queue),
	})
	if err == nil {
		n := running.GetCount()
		info.RunningWorkflows = &n
	}
	list, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: namespace, PageSize: RecentLimit,
		Query: fmt.Sprintf("TaskQueue = '%s'", queue),
	})
	if err == nil {
		for _, e := range list.GetExecutions() {
			if len(info.Recent) == RecentLimit {
				break
			}
			info.Recent = append(info.Recent, WorkflowSummary{WorkflowID: e.GetExecution().GetWorkflowId(), RunID: e.GetExecution().GetRunId(),
				Type: e.GetType().GetName(), Status: strings.ToLower(strings.TrimPrefix(e.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_")),
				StartTime: e.GetStartTime().AsTime().UTC()})
		}
	}
	return info, nil
}
