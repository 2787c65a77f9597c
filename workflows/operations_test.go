package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/workflows"
)

// DeviceOperation ends with a stable code however the request fails, and
// always closes the activity row with the outcome.
func TestDeviceOperationOutcomes(t *testing.T) {
	t.Parallel()
	refused := temporal.NewNonRetryableApplicationError("PID 9 is \"bash\", not \"sleep\"", proto.CodeOpMismatch, nil)
	for _, tc := range []struct {
		name       string
		send       func(context.Context, activities.CommandInput) (agentgateway.Reply, error)
		wantCode   string
		wantStatus string
	}{
		{"answered", func(context.Context, activities.CommandInput) (agentgateway.Reply, error) {
			return agentgateway.Reply{Payload: json.RawMessage(`{"name":"cron","state":"running"}`)}, nil
		}, "", devices.ActivityCompleted},
		{"refused by the agent", func(context.Context, activities.CommandInput) (agentgateway.Reply, error) {
			return agentgateway.Reply{}, refused
		}, proto.CodeOpMismatch, devices.ActivityFailed},
		// Retried until the deadline, then the last reason stands.
		{"the agent never connected", func(context.Context, activities.CommandInput) (agentgateway.Reply, error) {
			return agentgateway.Reply{}, temporal.NewApplicationError("no socket", "agent_socket_missing")
		}, "agent_socket_missing", devices.ActivityFailed},
		{"a fault retried until it works", func() func(context.Context, activities.CommandInput) (agentgateway.Reply, error) {
			calls := 0
			return func(context.Context, activities.CommandInput) (agentgateway.Reply, error) {
				if calls++; calls < 3 {
					return agentgateway.Reply{}, errors.New("database unavailable")
				}
				return agentgateway.Reply{Payload: json.RawMessage(`{}`)}, nil
			}
		}(), "", devices.ActivityCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			var cmds *activities.AgentCommands
			var ops *activities.Operations
			env.RegisterActivity(cmds)
			env.RegisterActivity(ops)
			env.OnActivity(cmds.SendToAgent, mock.Anything, mock.Anything).Return(tc.send)
			env.OnActivity(ops.BeginOperation, mock.Anything, mock.Anything).Return(int64(41), nil)
			env.OnActivity(ops.ApplyAgentAnswer, mock.Anything, mock.Anything).Return("cron is running", nil)
			var finished activities.FinishInput
			env.OnActivity(ops.FinishOperation, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.FinishInput) error {
				finished = in
				return nil
			})
			env.ExecuteWorkflow(workflows.DeviceOperation, workflows.OperationInput{OperationID: "op-1", Type: proto.EventServiceControl,
				Kind: "service_start", Summary: "Start cron", Actor: "alice", Timeout: time.Minute,
				Target: devices.OperationTarget{GUID: "g", Hostname: "h", SiteID: 1, SiteSlug: "s"}})
			require.True(t, env.IsWorkflowCompleted())
			err := env.GetWorkflowError()
			if tc.wantCode == "" {
				require.NoError(t, err)
			} else {
				var app *temporal.ApplicationError
				require.ErrorAs(t, err, &app)
				require.Equal(t, tc.wantCode, app.Type())
				require.Equal(t, tc.wantCode, finished.Meta["error"])
			}
			require.Equal(t, int64(41), finished.ActivityID, "the row opened is the row closed")
			require.Equal(t, tc.wantStatus, finished.Status)
			require.Contains(t, finished.Meta, "duration_ms")
		})
	}
}

// A running operation answers where it is by Query (GET
// /api/operations/<operation_id> reads it before PostgreSQL has the outcome).
func TestDeviceOperationAnswersItsPhase(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	var cmds *activities.AgentCommands
	var ops *activities.Operations
	env.RegisterActivity(cmds)
	env.RegisterActivity(ops)
	env.OnActivity(cmds.SendToAgent, mock.Anything, mock.Anything).After(time.Minute).
		Return(agentgateway.Reply{Payload: json.RawMessage(`{}`)}, nil)
	env.OnActivity(ops.BeginOperation, mock.Anything, mock.Anything).Return(int64(41), nil)
	env.OnActivity(ops.ApplyAgentAnswer, mock.Anything, mock.Anything).Return("", nil)
	env.OnActivity(ops.FinishOperation, mock.Anything, mock.Anything).Return(nil)
	var during workflows.OperationProgress
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(workflows.QueryOperationStatus)
		require.NoError(t, err)
		require.NoError(t, v.Get(&during))
	}, 30*time.Second)
	env.ExecuteWorkflow(workflows.DeviceOperation, workflows.OperationInput{OperationID: "op-1", Type: proto.EventSoftwareRefresh,
		Kind: "software_refresh", Summary: "Refresh", Timeout: 2 * time.Minute,
		Target: devices.OperationTarget{GUID: "g", Hostname: "h", SiteID: 1, SiteSlug: "s"}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, workflows.OperationPhaseSending, during.Phase)
	v, err := env.QueryWorkflow(workflows.QueryOperationStatus)
	require.NoError(t, err)
	var after workflows.OperationProgress
	require.NoError(t, v.Get(&after))
	require.Equal(t, workflows.OperationProgress{Phase: workflows.OperationPhaseDone}, after)
}
