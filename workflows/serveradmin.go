package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/serveradmin"
)

// ServiceActionWorkflowPrefix starts every service action's workflow ID.
const ServiceActionWorkflowPrefix = "service-action:"

// ServiceActionWorkflowID names one service action: the service and the
// action are in it, so a list of the workflows shows them.
func ServiceActionWorkflowID(a serveradmin.ServiceAction, id string) string {
	return ServiceActionWorkflowPrefix + a.Service + ":" + a.Action + ":" + id
}

// ParseServiceActionWorkflowID splits a service action's workflow ID.
func ParseServiceActionWorkflowID(wid string) (service, action, id string, ok bool) {
	rest, ok := strings.CutPrefix(wid, ServiceActionWorkflowPrefix)
	if !ok {
		return "", "", "", false
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return "", "", "", false
	}
	rest, id = rest[:i], rest[i+1:]
	j := strings.LastIndexByte(rest, ':')
	if j < 0 {
		return "", "", "", false
	}
	return rest[:j], rest[j+1:], id, true
}

// JobKindServiceAction is the JobKind search attribute of a service action.
const JobKindServiceAction = "service_action"

// ServiceActionInput is a validated action and who asked.
type ServiceActionInput struct {
	ID     string                    `json:"id"`
	Action serveradmin.ServiceAction `json:"action"`
	Actor  string                    `json:"actor"`
}

// ServiceActionResult is the action's outcome, shown on the Server page.
type ServiceActionResult struct {
	Detail      string                        `json:"detail"`
	Restart     *activities.WorkerRestart     `json:"restart,omitempty"`
	Serving     *activities.WorkerServing     `json:"serving,omitempty"`
	Certificate *activities.CertificateReload `json:"certificate,omitempty"`
	Tunnels     []string                      `json:"tunnels,omitempty"`
}

// ServiceAction carries out a service action of the Server page (SPEC
// "Server administration": workload restart, edge reload, tunnel
// reconcile). A site worker's restart runs on the site's own queue, then
// waits for a worker of that queue to answer again.
func ServiceAction(ctx workflow.Context, in ServiceActionInput) (ServiceActionResult, error) {
	opts := workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 5},
	}
	var a *activities.ServiceAdmin
	var out ServiceActionResult
	switch in.Action.Action {
	case serveradmin.ActionRestart:
		queue := SiteTaskQueue(in.Action.SiteSlug)
		site := opts
		site.TaskQueue = queue
		// A stopped worker picks nothing up: bound the wait for one.
		site.ScheduleToCloseTimeout = 5 * time.Minute
		var r activities.WorkerRestart
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, site), a.RestartSiteWorker, queue, in.ID).Get(ctx, &r); err != nil {
			return out, err
		}
		var s activities.WorkerServing
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, site), a.SiteWorkerServing, queue, r).Get(ctx, &s); err != nil {
			return out, err
		}
		out.Restart, out.Serving = &r, &s
		out.Detail = "the site worker of " + in.Action.SiteSlug + " restarted in " + r.Process + "; " + s.Process + " serves it again"
	case serveradmin.ActionReloadCertificate:
		var c activities.CertificateReload
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), a.ReloadCertificate).Get(ctx, &c); err != nil {
			return out, err
		}
		out.Certificate = &c
		out.Detail = "the certificate was read again; unchanged"
		if c.Replaced {
			out.Detail = "the certificate was replaced"
		}
	case serveradmin.ActionReconcileTunnels:
		var ids []string
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), a.ReconcileTunnels, in.Actor).Get(ctx, &ids); err != nil {
			return out, err
		}
		out.Tunnels = ids
		out.Detail = "no active tunnel to reconcile"
		if len(ids) > 0 {
			out.Detail = fmt.Sprintf("tunnel establishment queued for %d active tunnels", len(ids))
		}
	default:
		return out, temporal.NewNonRetryableApplicationError("unknown service action "+in.Action.Action, "validation_failed", nil)
	}
	return out, nil
}
