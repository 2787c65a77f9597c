package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/workflows"
)

// setupApproval returns a test environment whose DecideApproval records
// what it was asked and answers that status.
func setupApproval(t *testing.T) (*testsuite.TestWorkflowEnvironment, *[]activities.DecideInput) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	var a *activities.Enrollment
	env.RegisterActivity(a)
	var calls []activities.DecideInput
	env.OnActivity(a.DecideApproval, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.DecideInput) (string, error) {
		calls = append(calls, in)
		return in.Status, nil
	})
	return env, &calls
}

func TestEnrollmentApprovalDecisions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		signals []workflows.EnrollmentDecision
		want    string
		actor   string
	}{
		{"approve", []workflows.EnrollmentDecision{{Decision: "approve", Actor: "alice"}}, "approved", "alice"},
		{"deny", []workflows.EnrollmentDecision{{Decision: "deny", Actor: "bob"}}, "denied", "bob"},
		{"unknown decisions are ignored", []workflows.EnrollmentDecision{{Decision: "maybe", Actor: "eve"}, {Decision: "approve", Actor: "alice"}}, "approved", "alice"},
		{"no decision expires", nil, "expired", "expiry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env, calls := setupApproval(t)
			for i, s := range tc.signals {
				env.RegisterDelayedCallback(func() {
					env.SignalWorkflow(workflows.SignalEnrollmentDecision, s)
				}, time.Duration(i+1)*time.Minute)
			}
			start := env.Now()
			env.ExecuteWorkflow(workflows.EnrollmentApproval, workflows.EnrollmentInput{ApprovalID: "ap-1", ExpiresAt: start.Add(time.Hour)})
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var res workflows.EnrollmentResult
			require.NoError(t, env.GetWorkflowResult(&res))
			require.Equal(t, tc.want, res.Status)
			require.Equal(t, []activities.DecideInput{{ApprovalID: "ap-1", Status: tc.want, Actor: tc.actor}}, *calls)
			if tc.signals == nil {
				require.GreaterOrEqual(t, env.Now().Sub(start), time.Hour, "expiry waits for the whole approval time")
			}
		})
	}
}

func TestEnrollmentWorkflowID(t *testing.T) {
	t.Parallel()
	require.Equal(t, "enrollment:ab-12", workflows.EnrollmentWorkflowID("ab-12"))
}

// updateResult collects what a decide update answered.
type updateResult struct {
	rejected error
	result   workflows.EnrollmentResult
	err      error
	complete bool
}

func (u *updateResult) callbacks(t *testing.T) *testsuite.TestUpdateCallback {
	return &testsuite.TestUpdateCallback{
		OnAccept: func() {},
		OnReject: func(err error) { u.rejected = err },
		OnComplete: func(v any, err error) {
			u.complete, u.err = true, err
			if err == nil {
				u.result = v.(workflows.EnrollmentResult)
			}
		},
	}
}

// The decide update answers with the recorded outcome: the first decision
// wins, a later one gets that outcome too, and an unknown decision is
// rejected without ending the approval.
func TestEnrollmentApprovalDecideUpdate(t *testing.T) {
	t.Parallel()
	env, calls := setupApproval(t)
	var unknown, first, second updateResult
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdateEnrollmentDecide, "u-0", unknown.callbacks(t), workflows.EnrollmentDecision{Decision: "maybe", Actor: "eve"})
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdateEnrollmentDecide, "u-1", first.callbacks(t), workflows.EnrollmentDecision{Decision: "deny", Actor: "bob"})
		env.UpdateWorkflow(workflows.UpdateEnrollmentDecide, "u-2", second.callbacks(t), workflows.EnrollmentDecision{Decision: "approve", Actor: "alice"})
	}, 2*time.Minute)
	start := env.Now()
	env.ExecuteWorkflow(workflows.EnrollmentApproval, workflows.EnrollmentInput{ApprovalID: "ap-2", ExpiresAt: start.Add(time.Hour)})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())

	require.ErrorContains(t, unknown.rejected, "unknown enrollment decision")
	want := workflows.EnrollmentResult{Status: "denied", Actor: "bob"}
	for _, u := range []updateResult{first, second} {
		require.True(t, u.complete)
		require.NoError(t, u.err)
		require.Equal(t, want, u.result)
	}
	require.Equal(t, []activities.DecideInput{{ApprovalID: "ap-2", Status: "denied", Actor: "bob"}}, *calls)
	require.Less(t, env.Now().Sub(start), time.Hour, "decided, not expired")
}
