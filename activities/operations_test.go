package activities_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type fixture struct {
	store  *db.Store
	ops    *activities.Operations
	target devices.OperationTarget
}

func setup(t *testing.T) fixture {
	t.Helper()
	ctx := context.Background()
	store := pgtest.NewDB(t)
	site, err := store.SiteInsert(ctx, db.SiteInsertParams{Name: "Main", Slug: "main"})
	require.NoError(t, err)
	_, err = store.DeviceInsert(ctx, db.DeviceInsertParams{Guid: "guid-1", Hostname: "ALPHA", SiteID: site.ID})
	require.NoError(t, err)
	return fixture{store: store, ops: &activities.Operations{Devices: devices.NewService(store, nil, devices.Config{})},
		target: devices.OperationTarget{GUID: "guid-1", Hostname: "ALPHA", SiteID: site.ID, SiteSlug: "main"}}
}

// A local activity is retried when its result did not reach the workflow,
// even though its first try committed (the worker died, the try timed
// out): BeginOperation retried that way leaves one activity row, not a
// second one stuck in running. Both the device operation's key
// (operation_id) and a file transfer's (transfer_id) are honoured.
func TestBeginOperationRetriedLeavesOneRow(t *testing.T) {
	t.Parallel()
	for name, meta := range map[string]map[string]any{
		"operation": {"operation_id": "0196a1b2-0000-7000-8000-000000000001", "type": "refresh_inventory"},
		"transfer":  {"transfer_id": "0196a1b2-0000-7000-8000-000000000002"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			tries := 0
			// The first try commits its row, then fails as a try whose
			// result was lost does.
			begin := func(ctx context.Context, in activities.OperationRecord) (int64, error) {
				tries++
				id, err := f.ops.BeginOperation(ctx, in)
				if err == nil && tries == 1 {
					return 0, errors.New("the result of the first try was lost")
				}
				return id, err
			}
			wf := func(ctx workflow.Context) (int64, error) {
				ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 30 * time.Second,
					RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 3}})
				var id int64
				err := workflow.ExecuteLocalActivity(ctx, begin, activities.OperationRecord{Target: f.target, Kind: "operation",
					Summary: "Refresh inventory", Actor: "admin", Meta: meta}).Get(ctx, &id)
				return id, err
			}
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			env.RegisterWorkflow(wf)
			env.ExecuteWorkflow(wf)
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var id int64
			require.NoError(t, env.GetWorkflowResult(&id))
			require.Equal(t, 2, tries, "the local activity was retried")

			rows, err := f.store.DeviceActivityList(context.Background(), db.DeviceActivityListParams{Hostname: "ALPHA",
				AllSites: true, SiteIds: []int64{}, MaxRows: 10})
			require.NoError(t, err)
			require.Len(t, rows, 1, "one row for one operation")
			require.Equal(t, id, rows[0].ID)
			require.Equal(t, devices.ActivityRunning, rows[0].Status)
		})
	}
}

// The activity row's key reads an operation or transfer ID whether the
// metadata crossed a Temporal payload (strings) or was built in process
// with the typed IDs.
func TestOperationKeyReadsTypedAndPlainIDs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		meta map[string]any
		want string
	}{
		{map[string]any{"operation_id": "op-1"}, "op-1"},
		{map[string]any{"operation_id": cairn.OperationID("op-2")}, "op-2"},
		{map[string]any{"transfer_id": "t-1"}, "transfer:t-1"},
		{map[string]any{"transfer_id": cairn.TransferID("t-2")}, "transfer:t-2"},
		{map[string]any{"operation_id": 7}, ""},
		{map[string]any{}, ""},
	} {
		require.Equal(t, tc.want, activities.OperationKey(tc.meta), "%v", tc.meta)
	}
}
