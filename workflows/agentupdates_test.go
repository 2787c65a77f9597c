package workflows_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/workflows"
)

// AgentUpdate ends with what the agent reported, times out when the agent
// never checks in, and fails when the agent refuses the request.
func TestAgentUpdateOutcomes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		send error
		// reportAfter: the agent's outcome is recorded after this many
		// looks at the record ("" never).
		report      string
		reportAfter int32
		signal      bool
		want        string
		wantSummary string
		// carried is the status the progress signal carries ("": none,
		// as older Engines sent); looks how often the record is read.
		carried string
		looks   int32
	}{
		{"checks in after a signal", nil, "succeeded", 1, true, "succeeded", "", "", 2},
		{"signal lost, the periodic look finds it", nil, "rolled_back", 1, false, "rolled_back", "", "", 2},
		{"never checks in", nil, "", 0, false, "timed_out", "did not check in on build b2 within 10m0s", "", 11},
		{"refused", temporal.NewNonRetryableApplicationError("bad signature", proto.CodeSignatureInvalid, nil), "", 0, false,
			"failed", "(signature_invalid): bad signature", "", 0},
		// The route recorded the status before signalling: the workflow
		// takes it from the signal instead of reading the record again.
		{"the signal carries the outcome", nil, "", 0, true, "failed", "", "failed", 1},
		{"the signal carries progress", nil, "succeeded", 1, true, "succeeded", "", "running", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			var cmds *activities.AgentCommands
			var rec *activities.AgentUpdates
			env.RegisterActivity(cmds)
			env.RegisterActivity(rec)
			env.OnActivity(cmds.SendToAgent, mock.Anything, mock.Anything).Return(agentgateway.Reply{}, tc.send)
			env.OnActivity(rec.BeginAgentUpdate, mock.Anything, cairn.OperationID("op-1")).Return(nil)
			var looks atomic.Int32
			env.OnActivity(rec.AgentUpdateStatus, mock.Anything, cairn.OperationID("op-1")).Return(func(context.Context, cairn.OperationID) (string, error) {
				if n := looks.Add(1); tc.report != "" && n > tc.reportAfter {
					return tc.report, nil
				}
				return "running", nil
			})
			var finished activities.FinishAgentUpdateInput
			env.OnActivity(rec.FinishAgentUpdate, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.FinishAgentUpdateInput) (string, error) {
				finished = in
				return in.Status, nil
			})
			if tc.signal {
				env.RegisterDelayedCallback(func() {
					var progress any
					if tc.carried != "" {
						progress = workflows.AgentUpdateProgress{Status: tc.carried}
					}
					env.SignalWorkflow(workflows.SignalAgentUpdateProgress, progress)
				}, time.Second)
			}
			env.ExecuteWorkflow(workflows.AgentUpdate, workflows.AgentUpdateInput{OperationID: "op-1", ToBuildID: "b2",
				Target: devices.OperationTarget{GUID: "g", Hostname: "h", SiteID: 1, SiteSlug: "s"}})
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var status string
			require.NoError(t, env.GetWorkflowResult(&status))
			require.Equal(t, tc.want, status)
			require.Equal(t, tc.looks, looks.Load(), "reads of the record")
			if tc.wantSummary != "" {
				require.Equal(t, tc.want, finished.Status)
				require.Contains(t, finished.Summary, tc.wantSummary)
			} else {
				require.Empty(t, finished.Status, "the agent's outcome stands; the workflow records nothing over it")
			}
		})
	}
}
