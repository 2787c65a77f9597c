package workflows_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/workflows"
)

// refusingTemporal answers every start with err, as a Temporal too busy to
// take it does; the rest of the client is never called.
type refusingTemporal struct {
	client.Client
	err   error
	tries int
}

func (c *refusingTemporal) ExecuteWorkflow(context.Context, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	c.tries++
	return nil, c.err
}

// A start Temporal cannot take in time is answered unavailable with a
// Retry-After, which clients (and the API tests) honour before trying again.
func TestBusyStartSaysWhenToRetry(t *testing.T) {
	t.Parallel()
	for name, err := range map[string]error{
		"exhausted":         serviceerror.NewResourceExhausted(0, "busy"),
		"deadline exceeded": serviceerror.NewDeadlineExceeded("no answer"),
		"unavailable":       serviceerror.NewUnavailable("gate closed"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tc := &refusingTemporal{err: err}
			got := workflows.JobRunStarter{Client: tc}.Start(context.Background(), workflows.JobRunInput{RunID: "run-1"})
			var e *cairn.Error
			require.ErrorAs(t, got, &e)
			require.Equal(t, cairn.ECodeUnavailable, e.Code)
			require.Equal(t, 5, e.RetryAfterSeconds)
			require.Equal(t, 4, tc.tries, "a busy start is tried again before answering")
		})
	}
}
