package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// The gate follows the newest probe: a slow probe that started before
// Temporal came back and fails after a newer one succeeded must not close
// it again (a request would get a 503 from a Temporal that answers).
func TestTemporalGateFollowsTheNewestProbe(t *testing.T) {
	t.Parallel()
	g := &temporalGate{}
	t0 := time.Now()
	require.NoError(t, g.closed(), "open until a probe fails")

	g.report(false, t0)
	var unavailable *serviceerror.Unavailable
	_, err := g.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{}, "wf")
	require.ErrorAs(t, err, &unavailable, "closed: calls fail at once without reaching the client")

	g.report(true, t0.Add(2*time.Second))
	g.report(false, t0.Add(time.Second)) // started earlier, answered later
	require.NoError(t, g.closed())

	g.report(false, t0.Add(3*time.Second))
	require.Error(t, g.closed())
}
