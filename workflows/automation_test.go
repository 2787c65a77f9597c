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
	ansible  bool
	sent     []string
	recorded int
	finished bool
	// events orders slot acquisitions ("acquire <site> <kind>"), sends
	// ("send <guid>") and releases ("release").
	events []string
}

func (e *jobRunEnv) register(env *testsuite.TestWorkflowEnvironment) {
	env.RegisterActivityWithOptions(func(_ context.Context, in activities.NextInput) (automation.Batch, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		n := min(in.Max, len(e.pending))
		b := automation.Batch{TimeoutSeconds: 60, Items: e.pending[:n:n], Ansible: e.ansible}
		e.pending = e.pending[n:]
		return b, nil
	}, activity.RegisterOptions{Name: "NextItems"})
	env.RegisterActivityWithOptions(func(_ context.Context, in activities.SendScriptInput) (agentgateway.Reply, error) {
		e.mu.Lock()
		e.sent = append(e.sent, string(in.GUID))
		e.events = append(e.events, "send "+string(in.GUID))
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
	env.RegisterActivityWithOptions(func(_ context.Context, in activities.SlotInput) error {
		e.mu.Lock()
		e.events = append(e.events, fmt.Sprintf("acquire %d %s %s", in.SiteID, in.Kind, in.Holder))
		e.mu.Unlock()
		return nil
	}, activity.RegisterOptions{Name: "AcquireSlot"})
	env.RegisterActivityWithOptions(func(_ context.Context, holder string) error {
		e.mu.Lock()
		e.events = append(e.events, "release "+holder)
		e.mu.Unlock()
		return nil
	}, activity.RegisterOptions{Name: "ReleaseSlots"})
}

// An Ansible playbook run's batch holds one lane slot of each site it
// touches while its devices run (SPEC "Limits": one slot per site batch,
// one slot for a one-target run), freed after; a script run takes none.
func TestJobRunAnsibleHoldsOneSlotPerSite(t *testing.T) {
	t.Parallel()
	item := func(guid string, site int64) automation.Item {
		return automation.Item{GUID: cairn.DeviceGUID(guid), Hostname: guid, SiteID: cairn.SiteID(site), SiteSlug: fmt.Sprint("s", site)}
	}
	holder := "default-test-workflow-id"
	for _, tc := range []struct {
		name    string
		ansible bool
		items   []automation.Item
		want    []string
	}{
		{"shared batch", true, []automation.Item{item("a", 2), item("b", 1), item("c", 2)},
			[]string{"acquire 1 ansible " + holder, "acquire 2 ansible " + holder, "send", "send", "send", "release " + holder}},
		{"one target", true, []automation.Item{item("a", 3)}, []string{"acquire 3 ansible " + holder, "send", "release " + holder}},
		{"script", false, []automation.Item{item("a", 1), item("b", 2)}, []string{"send", "send"}},
		// A scheduled playbook: its fire holds the slots.
		{"lane held", true, []automation.Item{item("a", 1), item("b", 2)}, []string{"send", "send"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			fake := &jobRunEnv{pending: tc.items, ansible: tc.ansible}
			fake.register(env)
			env.ExecuteWorkflow(workflows.JobRun, workflows.JobRunInput{RunID: "run-1", LaneHeld: tc.name == "lane held"})
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			got := make([]string, len(fake.events))
			for i, e := range fake.events {
				if len(e) > 4 && e[:4] == "send" {
					e = "send"
				}
				got[i] = e
			}
			require.Equal(t, tc.want, got)
			require.True(t, fake.finished)
		})
	}
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
