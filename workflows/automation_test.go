package workflows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/workflows"
)

// jobRunEnv runs JobRun over pending devices with the run's activities
// faked: NextItems hands out up to Max of what is still pending, as the
// real query does.
type jobRunEnv struct {
	mu       sync.Mutex
	pending  []automation.Item
	sent     []string
	recorded int
	finished bool
}

func (e *jobRunEnv) register(env *testsuite.TestWorkflowEnvironment) {
	env.RegisterActivityWithOptions(func(_ context.Context, in activities.NextInput) (automation.Batch, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		n := min(in.Max, len(e.pending))
		b := automation.Batch{TimeoutSeconds: 60, Items: e.pending[:n:n]}
		e.pending = e.pending[n:]
		return b, nil
	}, activity.RegisterOptions{Name: "NextItems"})
	env.RegisterActivityWithOptions(func(_ context.Context, in activities.SendScriptInput) (agentgateway.Reply, error) {
		e.mu.Lock()
		e.sent = append(e.sent, string(in.GUID))
		e.mu.Unlock()
		return agentgateway.Reply{Payload: json.RawMessage(`{"exit_code":0}`)}, nil
	}, activity.RegisterOptions{Name: "SendScript"})
	env.RegisterActivityWithOptions(func(_ context.Context, outs []automation.Outcome) error {
		e.mu.Lock()
		e.recorded += len(outs)
		e.mu.Unlock()
		return nil
	}, activity.RegisterOptions{Name: "RecordOutcomes"})
	env.RegisterActivityWithOptions(func(context.Context, cairn.RunID) error {
		e.mu.Lock()
		e.finished = true
		e.mu.Unlock()
		return nil
	}, activity.RegisterOptions{Name: "FinishRun"})
}

func pendingDevices(n int) []automation.Item {
	out := make([]automation.Item, n)
	for i := range out {
		out[i] = automation.Item{GUID: cairn.DeviceGUID(fmt.Sprintf("guid-%03d", i)), Hostname: fmt.Sprintf("host-%03d", i), SiteID: 1, SiteSlug: "s"}
	}
	return out
}

// A run larger than a batch records the batch and continues as new, so
// no workflow history holds more than Batch devices; the last, partial
// batch closes the run.
func TestJobRunContinuesAsNewPerBatch(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	fake := &jobRunEnv{pending: pendingDevices(5)}
	in := workflows.JobRunInput{RunID: "run-1", Batch: 2}

	histories := 0
	for {
		env := suite.NewTestWorkflowEnvironment()
		fake.register(env)
		env.ExecuteWorkflow(workflows.JobRun, in)
		require.True(t, env.IsWorkflowCompleted())
		histories++
		err := env.GetWorkflowError()
		if err == nil {
			break
		}
		var cont *workflow.ContinueAsNewError
		require.ErrorAs(t, err, &cont, "a full batch continues as new")
		require.False(t, fake.finished, "the run is not closed while devices are pending")
		require.Equal(t, histories*in.Batch, fake.recorded, "every outcome of the batch is recorded before continuing")
		require.Less(t, histories, 10, "the run never ended")
	}
	require.Equal(t, 3, histories, "5 devices in batches of 2")
	require.True(t, fake.finished)
	require.Equal(t, 5, fake.recorded)
	require.Len(t, fake.sent, 5)
}
