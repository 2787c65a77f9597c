package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/cluster"
)

// SignalClusterDecision carries an administrator's ClusterDecision.
const (
	SignalClusterDecision = "cluster-decision"
	// JobKindClusterAdmission is the JobKind search attribute of admissions.
	JobKindClusterAdmission = "cluster_admission"
)

// ClusterAdmissionWorkflowID names the admission of one joining process.
func ClusterAdmissionWorkflowID(admissionID string) string { return "cluster-admission:" + admissionID }

// ClusterAdmissionInput starts an admission.
type ClusterAdmissionInput struct {
	AdmissionID string
	ExpiresAt   time.Time
}

// ClusterDecision is the signal's payload: approve or cancel.
type ClusterDecision struct {
	Decision string
	Actor    string
}

// ClusterAdmissionResult is how the admission ended.
type ClusterAdmissionResult struct {
	State string
	Actor string
}

// ClusterAdmission waits for an administrator's decision on a process
// asking to join the cluster, or for the admission to expire, and records
// the outcome (SettleClusterAdmission seals the handoff on approval). A
// decision that is neither approve nor cancel is ignored; the first one
// wins. The wait survives Engine restarts: it is the durable part of a
// join.
func ClusterAdmission(ctx workflow.Context, in ClusterAdmissionInput) (ClusterAdmissionResult, error) {
	var result ClusterAdmissionResult
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	expiry := workflow.NewTimer(timerCtx, in.ExpiresAt.Sub(workflow.Now(ctx)))
	signals := workflow.GetSignalChannel(ctx, SignalClusterDecision)
	decision := ""
	for decision == "" {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(signals, func(c workflow.ReceiveChannel, _ bool) {
			var d ClusterDecision
			c.Receive(ctx, &d)
			switch d.Decision {
			case cluster.DecisionApprove, cluster.DecisionCancel:
				decision, result.Actor = d.Decision, d.Actor
			default:
				workflow.GetLogger(ctx).Warn("ignoring unknown cluster decision", "decision", d.Decision)
			}
		})
		sel.AddFuture(expiry, func(workflow.Future) { decision, result.Actor = cluster.DecisionExpire, "expiry" })
		sel.Select(ctx)
	}
	cancelTimer()
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute, MaximumAttempts: 20},
	})
	var a *activities.Cluster
	err := workflow.ExecuteActivity(actx, a.SettleClusterAdmission,
		activities.ClusterSettleInput{AdmissionID: in.AdmissionID, Decision: decision, Actor: result.Actor}).Get(ctx, &result.State)
	return result, err
}
