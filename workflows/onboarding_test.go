package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/workflows"
)

// A redeploy job ends enrolled, expired, canceled or failed, and records
// each status it passes through: sent when the agent took the code,
// agent_offline when no agent answered (the code waits for a manual
// install), failed when the device may not be acted on.
func TestOnboardingRedeployOutcomes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		send       error
		enrolledAt int // the look that finds the enrollment (0: never)
		cancelAt   time.Duration
		want       []string
	}{
		{"the agent takes the code and enrolls", nil, 3, 0, []string{"sent", "enrolled"}},
		{"no agent, the code expires", temporal.NewApplicationError("no socket", "agent_socket_missing"), 0, 0,
			[]string{"agent_offline", "expired"}},
		{"no agent, a manual install enrolls", temporal.NewApplicationError("no socket", "agent_socket_missing"), 2, 0,
			[]string{"agent_offline", "enrolled"}},
		{"quarantined meanwhile", temporal.NewNonRetryableApplicationError("quarantined", "device_quarantined", nil), 0, 0,
			[]string{"failed"}},
		{"canceled while waiting", nil, 0, 10 * time.Minute, []string{"sent", "canceled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			var cmds *activities.AgentCommands
			var ob *activities.Onboarding
			env.RegisterActivity(cmds)
			env.RegisterActivity(ob)
			env.OnActivity(cmds.SendToAgent, mock.Anything, mock.Anything).Return(agentgateway.Reply{}, tc.send)
			var statuses []string
			env.OnActivity(ob.SetOnboardingStatus, mock.Anything, mock.Anything).Return(
				func(_ context.Context, in activities.OnboardingStatusInput) (string, error) {
					statuses = append(statuses, in.Status)
					return in.Status, nil
				})
			looks := 0
			env.OnActivity(ob.OnboardingEnrolled, mock.Anything, "job-1").Return(func(context.Context, string) (bool, error) {
				looks++
				return tc.enrolledAt > 0 && looks >= tc.enrolledAt, nil
			})
			if tc.cancelAt > 0 {
				env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalOnboardingCancel, nil) }, tc.cancelAt)
			}
			start := env.Now()
			env.ExecuteWorkflow(workflows.OnboardingRedeploy, workflows.OnboardingInput{JobID: "job-1", GUID: "g-1", OperationID: "op-1",
				Payload: []byte(`{"enrollment_code":"C"}`), Grant: "grant", ExpiresAt: start.Add(time.Hour)})
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var final string
			require.NoError(t, env.GetWorkflowResult(&final))
			require.Equal(t, tc.want, statuses)
			require.Equal(t, tc.want[len(tc.want)-1], final)
			if final == "expired" {
				require.False(t, env.Now().Before(start.Add(time.Hour)), "it waited for the code's expiry")
			}
		})
	}
}

// A code that lives a week is waited for in runs of bounded history: the
// recheck backs off to a minute and a run continues as new after its
// checks, the next run only waiting (nothing sent again).
func TestOnboardingRedeployBoundsItsHistory(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*testsuite.TestWorkflowEnvironment, *int, *[]string, *int) {
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestWorkflowEnvironment()
		var cmds *activities.AgentCommands
		var ob *activities.Onboarding
		env.RegisterActivity(cmds)
		env.RegisterActivity(ob)
		sends, looks := 0, 0
		statuses := []string{}
		env.OnActivity(cmds.SendToAgent, mock.Anything, mock.Anything).Return(func(context.Context, activities.CommandInput) (agentgateway.Reply, error) {
			sends++
			return agentgateway.Reply{}, temporal.NewApplicationError("no socket", "agent_socket_missing")
		})
		env.OnActivity(ob.SetOnboardingStatus, mock.Anything, mock.Anything).Return(
			func(_ context.Context, in activities.OnboardingStatusInput) (string, error) {
				statuses = append(statuses, in.Status)
				return in.Status, nil
			})
		env.OnActivity(ob.OnboardingEnrolled, mock.Anything, "job-1").Return(func(context.Context, string) (bool, error) {
			looks++
			return false, nil
		})
		return env, &sends, &statuses, &looks
	}
	in := workflows.OnboardingInput{JobID: "job-1", GUID: "g-1", OperationID: "op-1", Payload: []byte(`{"enrollment_code":"C"}`), Grant: "grant"}

	env, sends, statuses, looks := setup(t)
	start := env.Now()
	in.ExpiresAt = start.Add(7 * 24 * time.Hour)
	env.ExecuteWorkflow(workflows.OnboardingRedeploy, in)
	require.True(t, env.IsWorkflowCompleted())
	var next *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &next, "a week of checks does not fit one run")
	require.Positive(t, *sends, "the request was sent (and retried while no socket)")
	require.Equal(t, []string{"agent_offline"}, *statuses)
	require.Equal(t, 400, *looks, "a run's checks are bounded")
	require.Greater(t, env.Now().Sub(start), 6*time.Hour, "the recheck backed off to a minute")

	// The next run only waits: nothing is sent again.
	env, sends, statuses, _ = setup(t)
	in.Waiting, in.ExpiresAt = true, env.Now().Add(10*time.Minute)
	env.ExecuteWorkflow(workflows.OnboardingRedeploy, in)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Zero(t, *sends)
	require.Equal(t, []string{"expired"}, *statuses)
}
