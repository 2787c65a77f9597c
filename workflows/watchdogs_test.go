package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/watchdogs"
	"github.com/cairn-rmm/cairn/workflows"
)

// incidentActs stands in for the incident workflow's activities.
type incidentActs struct {
	active        bool
	actions       []watchdogs.Action
	toasts, looks int
	recorded      []watchdogs.Outcome
	// plans answers notification steps in turn (then nothing due).
	plans     []watchdogs.NotifyPlan
	steps     []int
	delivered []watchdogs.Delivery
	runs      int
	children  int
}

func (a *incidentActs) register(env *testsuite.TestWorkflowEnvironment) {
	env.RegisterActivityWithOptions(func(context.Context, int64) (activities.IncidentPlan, error) {
		a.looks++
		actions := a.actions
		if actions == nil {
			actions = []watchdogs.Action{{Type: watchdogs.ActionToast}, {Type: watchdogs.ActionTrack}}
		}
		return activities.IncidentPlan{Active: a.active, Actions: actions}, nil
	}, activityName("PlanIncident"))
	env.RegisterActivityWithOptions(func(_ context.Context, in activities.NotifyStepInput) (watchdogs.NotifyPlan, error) {
		a.steps = append(a.steps, in.Step)
		if len(a.plans) == 0 {
			return watchdogs.NotifyPlan{Active: a.active}, nil
		}
		p := a.plans[0]
		a.plans = a.plans[1:]
		return p, nil
	}, activityName("PlanIncidentNotifications"))
	env.RegisterActivityWithOptions(func(_ context.Context, d watchdogs.Delivery) (string, error) {
		a.delivered = append(a.delivered, d)
		return watchdogs.DeliverySent, nil
	}, activityName("DeliverIncidentNotification"))
	env.RegisterActivityWithOptions(func(_ context.Context, ref activities.IncidentActionRef) (activities.IncidentRun, error) {
		a.runs++
		return activities.IncidentRun{RunID: activities.IncidentRunID("g", ref.IncidentID, ref.Action)}, nil
	}, activityName("CreateIncidentRun"))
	env.RegisterActivityWithOptions(func(_ context.Context, id cairn.RunID) (watchdogs.Outcome, error) {
		return watchdogs.Outcome{Status: "succeeded", Message: "restart-svc exited 0", RunID: string(id)}, nil
	}, activityName("IncidentRunOutcome"))
	env.RegisterWorkflowWithOptions(func(workflow.Context, workflows.JobRunInput) error {
		a.children++
		return nil
	}, workflow.RegisterOptions{Name: "JobRun"})
	env.RegisterActivityWithOptions(func(context.Context, int64) error { a.toasts++; return nil }, activityName("ToastIncident"))
	env.RegisterActivityWithOptions(func(_ context.Context, in activities.OutcomeInput) error {
		a.recorded = append(a.recorded, in.Outcome)
		return nil
	}, activityName("RecordIncidentOutcome"))
}

func TestIncidentRunsItsActionsOnceAndEndsOnSignal(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	acts := &incidentActs{active: true}
	acts.register(env)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalIncidentEnded, nil) }, 150*time.Minute)
	env.ExecuteWorkflow(workflows.WatchdogIncident, workflows.IncidentInput{IncidentID: 9})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res workflows.IncidentResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Len(t, res.Outcomes, 2)
	require.Equal(t, 1, acts.toasts)
	require.Len(t, acts.recorded, 2)
	require.Equal(t, 3, acts.looks, "the plan, then one look an hour until the signal")
}

func TestIncidentEndsWhenItsIncidentIsGone(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	acts := &incidentActs{active: false}
	acts.register(env)
	env.ExecuteWorkflow(workflows.WatchdogIncident, workflows.IncidentInput{IncidentID: 9})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Zero(t, acts.toasts, "a resolved incident's actions do not run")
}

func TestLongOpenIncidentContinuesAsNewWithoutActingAgain(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	acts := &incidentActs{active: true}
	acts.register(env)
	env.ExecuteWorkflow(workflows.WatchdogIncident, workflows.IncidentInput{IncidentID: 9, Acted: true})
	require.True(t, env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "%v", env.GetWorkflowError())
	require.Zero(t, acts.toasts, "a continued run only waits")
}

func activityName(name string) activity.RegisterOptions { return activity.RegisterOptions{Name: name} }

func TestIncidentNotifiesAtOnceAndRepeatsUntilNothingIsDue(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	acts := &incidentActs{active: true, plans: []watchdogs.NotifyPlan{
		{Active: true, Channels: []int64{1, 2}, Next: 5 * time.Minute},
		{Active: true, Channels: []int64{2}, Next: 5 * time.Minute},
		{Active: true}, // acknowledged: nothing more
	}}
	acts.register(env)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalIncidentEnded, nil) }, 3*time.Hour)
	env.ExecuteWorkflow(workflows.WatchdogIncident, workflows.IncidentInput{IncidentID: 9})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []int{0, 1, 2}, acts.steps, "a step at once, then one per repetition")
	require.Equal(t, []watchdogs.Delivery{{IncidentID: 9, Step: 0, ChannelID: 1}, {IncidentID: 9, Step: 0, ChannelID: 2},
		{IncidentID: 9, Step: 1, ChannelID: 2}}, acts.delivered)
}

func TestIncidentNotificationsEndWithTheIncident(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	acts := &incidentActs{active: true, plans: []watchdogs.NotifyPlan{
		{Active: true, Next: time.Hour, MutedUntil: time.Now().Add(time.Hour)}, // a maintenance window
		{Active: false}, // resolved meanwhile
	}}
	acts.register(env)
	env.ExecuteWorkflow(workflows.WatchdogIncident, workflows.IncidentInput{IncidentID: 9})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []int{0, 1}, acts.steps)
	require.Empty(t, acts.delivered, "nothing sent during the window")
}

func TestIncidentRunsItsAssemblyOnceAsAJobRun(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	acts := &incidentActs{active: false, actions: []watchdogs.Action{{Type: watchdogs.ActionRunAssembly, AssemblyID: 3}}}
	acts.active = true
	acts.register(env)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalIncidentEnded, nil) }, time.Minute)
	env.ExecuteWorkflow(workflows.WatchdogIncident, workflows.IncidentInput{IncidentID: 9})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, 1, acts.runs)
	require.Equal(t, 1, acts.children)
	require.Len(t, acts.recorded, 1)
	require.Equal(t, "succeeded", acts.recorded[0].Status)
	require.Equal(t, "watchdog-g-9-0", acts.recorded[0].RunID)
}

func TestIncidentNotificationPlanFailureDoesNotFailTheIncident(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	acts := &incidentActs{active: true}
	acts.register(env)
	failures := 0
	env.OnActivity("PlanIncidentNotifications", mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.NotifyStepInput) (watchdogs.NotifyPlan, error) {
			acts.steps = append(acts.steps, in.Step)
			if failures < 1 {
				failures++
				return watchdogs.NotifyPlan{}, temporal.NewNonRetryableApplicationError("database away", "unavailable", nil)
			}
			return watchdogs.NotifyPlan{Active: true, Channels: []int64{4}}, nil
		})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalIncidentEnded, nil) }, 10*time.Minute)
	env.ExecuteWorkflow(workflows.WatchdogIncident, workflows.IncidentInput{IncidentID: 9})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []int{0, 0}, acts.steps, "the failed step is tried again under its number")
	require.Equal(t, []watchdogs.Delivery{{IncidentID: 9, Step: 0, ChannelID: 4}}, acts.delivered)
}
