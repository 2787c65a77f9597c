package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/cluster"
	"github.com/cairn-rmm/cairn/workflows"
)

func TestClusterAdmissionTakesTheFirstValidDecisionOrExpires(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		signals   []workflows.ClusterDecision
		wantState string
		wantActor string
	}{
		{"approve", []workflows.ClusterDecision{{Decision: "maybe", Actor: "eve"}, {Decision: cluster.DecisionApprove, Actor: "alice"},
			{Decision: cluster.DecisionCancel, Actor: "bob"}}, cluster.StateApproved, "alice"},
		{"cancel", []workflows.ClusterDecision{{Decision: cluster.DecisionCancel, Actor: "bob"}}, cluster.StateCancelled, "bob"},
		{"expire", nil, cluster.StateExpired, "expiry"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			var settled []activities.ClusterSettleInput
			env.RegisterActivity(&activities.Cluster{Settle: func(_ context.Context, id, decision, actor string) (string, error) {
				settled = append(settled, activities.ClusterSettleInput{AdmissionID: id, Decision: decision, Actor: actor})
				return map[string]string{cluster.DecisionApprove: cluster.StateApproved, cluster.DecisionCancel: cluster.StateCancelled,
					cluster.DecisionExpire: cluster.StateExpired}[decision], nil
			}})
			for i, d := range c.signals {
				env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalClusterDecision, d) }, time.Duration(i+1)*time.Minute)
			}
			env.ExecuteWorkflow(workflows.ClusterAdmission, workflows.ClusterAdmissionInput{AdmissionID: "a-1",
				ExpiresAt: env.Now().Add(cluster.AdmissionTTL)})
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var res workflows.ClusterAdmissionResult
			require.NoError(t, env.GetWorkflowResult(&res))
			require.Equal(t, workflows.ClusterAdmissionResult{State: c.wantState, Actor: c.wantActor}, res)
			require.Len(t, settled, 1, "one decision is recorded")
			require.Equal(t, "a-1", settled[0].AdmissionID)
		})
	}
}
