package workflows_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/workflows"
)

// An uninstall runs its job run, then refreshes the device's software
// whatever the run did (here the uninstaller exits 3).
func TestSoftwareUninstallRefreshesAfterTheRun(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(workflows.JobRun)
	env.RegisterWorkflow(workflows.DeviceOperation)
	var runs *activities.JobRuns
	var cmds *activities.AgentCommands
	var ops *activities.Operations
	env.RegisterActivity(runs)
	env.RegisterActivity(cmds)
	env.RegisterActivity(ops)
	var order []string
	env.OnActivity(runs.NextItems, mock.Anything, mock.Anything).Return(automation.Batch{TimeoutSeconds: 900,
		Items: []automation.Item{{GUID: "g", Hostname: "h", SiteID: 1, SiteSlug: "s"}}}, nil)
	env.OnActivity(runs.SendScript, mock.Anything, mock.Anything).Return(func(context.Context, activities.SendScriptInput) (agentgateway.Reply, error) {
		order = append(order, "script")
		return agentgateway.Reply{Payload: json.RawMessage(`{"exit_code":3}`)}, nil
	})
	var outcomes []automation.Outcome
	env.OnActivity(runs.RecordOutcomes, mock.Anything, mock.Anything).Return(func(_ context.Context, o []automation.Outcome) error {
		outcomes = append(outcomes, o...)
		return nil
	})
	env.OnActivity(runs.FinishRun, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(ops.BeginOperation, mock.Anything, mock.Anything).Return(int64(5), nil)
	env.OnActivity(cmds.SendToAgent, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.CommandInput) (agentgateway.Reply, error) {
		order = append(order, in.Type)
		return agentgateway.Reply{Payload: json.RawMessage(`{}`)}, nil
	})
	env.OnActivity(ops.ApplyAgentAnswer, mock.Anything, mock.Anything).Return("", nil)
	env.OnActivity(ops.FinishOperation, mock.Anything, mock.Anything).Return(nil)
	env.ExecuteWorkflow(workflows.SoftwareUninstall, workflows.SoftwareUninstallInput{RunID: "run-1",
		Refresh: workflows.OperationInput{OperationID: "op-1", Type: proto.EventSoftwareRefresh, Kind: "software_refresh",
			Timeout: time.Minute, Target: devices.OperationTarget{GUID: "g", Hostname: "h", SiteID: 1, SiteSlug: "s"}}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"script", proto.EventSoftwareRefresh}, order, "the refresh follows the run")
	require.Len(t, outcomes, 1)
	require.Equal(t, `{"exit_code":3}`, string(outcomes[0].Reply), "the run records the uninstaller's answer")
}
