package workflows_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/workflows"
)

// A change signal carries the record as the route left it: a transfer
// cancelled by its operator ends with that, without reading the record
// again. A signal that carries nothing (older Engines) makes it read.
func TestFileTransferTakesTheEndTheSignalCarries(t *testing.T) {
	t.Parallel()
	cancelled := workflows.FileTransferChange{State: "cancelled", Code: "transfer_cancelled", Message: "cancelled by admin"}
	for _, tc := range []struct {
		name   string
		signal any
		want   string
		looks  int32
	}{
		{"the signal carries the end", cancelled, "cancelled", 1},
		{"the signal says look again", nil, "completed", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			var ops *activities.Operations
			var cmds *activities.AgentCommands
			var ft *activities.FileTransfers
			env.RegisterActivity(ops)
			env.RegisterActivity(cmds)
			env.RegisterActivity(ft)
			env.OnActivity(ops.BeginOperation, mock.Anything, mock.Anything).Return(int64(7), nil)
			env.OnActivity(cmds.SendToAgent, mock.Anything, mock.Anything).Return(agentgateway.Reply{}, nil)
			env.OnActivity(ft.StartFileTransfer, mock.Anything, cairn.TransferID("t-1")).Return(nil)
			// The record says running at the first look and completed
			// after: only a read after the signal sees completed.
			var looks atomic.Int32
			env.OnActivity(ft.FileTransferState, mock.Anything, cairn.TransferID("t-1")).Return(func(context.Context, cairn.TransferID) (activities.TransferState, error) {
				if looks.Add(1) == 1 {
					return activities.TransferState{State: "running"}, nil
				}
				return activities.TransferState{State: "completed"}, nil
			})
			var finished activities.FinishInput
			env.OnActivity(ops.FinishOperation, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.FinishInput) error {
				finished = in
				return nil
			})
			env.OnActivity(ft.PurgeFileTransfer, mock.Anything, cairn.TransferID("t-1")).Return(nil)
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalFileTransferChanged, tc.signal) }, time.Second)
			env.ExecuteWorkflow(workflows.FileTransfer, workflows.FileTransferInput{TransferID: "t-1", Kind: "file_upload",
				Summary: "Upload 1 file", Request: json.RawMessage(`{"action":"upload"}`),
				Target: devices.OperationTarget{GUID: "g", Hostname: "h", SiteID: 1, SiteSlug: "s"}})
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var state string
			require.NoError(t, env.GetWorkflowResult(&state))
			require.Equal(t, tc.want, state)
			require.Equal(t, tc.looks, looks.Load(), "reads of the record")
			if tc.signal != nil {
				require.Equal(t, devices.ActivityCancelled, finished.Status)
				require.Equal(t, "Upload 1 file: cancelled by admin", finished.Summary)
				require.Equal(t, "transfer_cancelled", finished.Meta["error"])
			}
		})
	}
}
