package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/watchdogs"
	"github.com/cairn-rmm/cairn/workflows"
)

// incidentActs stands in for the incident workflow's activities.
type incidentActs struct {
	active        bool
	toasts, looks int
	recorded      []watchdogs.Outcome
}

func (a *incidentActs) register(env *testsuite.TestWorkflowEnvironment) {
	env.RegisterActivityWithOptions(func(context.Context, int64) (activities.IncidentPlan, error) {
		a.looks++
		return activities.IncidentPlan{Active: a.active, Actions: []watchdogs.Action{{Type: watchdogs.ActionToast}, {Type: watchdogs.ActionTrack}}}, nil
	}, activityName("PlanIncident"))
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
