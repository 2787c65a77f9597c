package workflows_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/cairn-rmm/cairn/engine"
)

// TestReplaySavedHistories replays every history in testdata (recorded by
// go run ./scripts/histories) against today's workflow code: a change
// that is not behind workflow.GetVersion fails here with a
// nondeterminism error. Every registered workflow has a history.
func TestReplaySavedHistories(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	covered := map[string]bool{}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			for _, wf := range engine.Workflows() {
				r.RegisterWorkflow(wf)
			}
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, file))
		})
		covered[workflowType(t, file)] = true
	}
	for _, name := range registeredNames() {
		require.True(t, covered[name], "no saved history of %s in testdata", name)
	}
}
