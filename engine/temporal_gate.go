package engine

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// temporalGate is the Temporal client of everything but the workers (they
// need the SDK's own client). While the Engine's last health probe of
// Temporal failed, calls that start or reach a workflow fail at once with
// Unavailable, which routes answer as 503 temporal_unavailable, instead of
// each retrying for the SDK's 10 s first. A Temporal that is merely slow
// answers its health probe (temporalProbe, 5 s) and is not gated: its calls
// take as long as they take. The probe runs every temporalAwayEvery while
// Temporal is away and every temporalUpEvery otherwise, so the gate opens
// within a second or so of Temporal's return, and closes within
// temporalUpEvery + temporalProbe of it going away (calls in between take
// the SDK's slow path, as before).
type temporalGate struct {
	client.Client

	mu    sync.Mutex
	away  bool
	since time.Time // when the probe that decided away started
}

const (
	temporalAwayEvery = time.Second
	temporalUpEvery   = 5 * time.Second
)

// report records a probe's outcome; a probe that started before the one
// that decided the current state (a late answer) changes nothing.
func (g *temporalGate) report(ok bool, started time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if started.Before(g.since) {
		return
	}
	g.away, g.since = !ok, started
}

func (g *temporalGate) isAway() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.away
}

func (g *temporalGate) closed() error {
	if g.isAway() {
		return serviceerror.NewUnavailable("Temporal did not answer the Engine's last health check")
	}
	return nil
}

func (g *temporalGate) ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error) {
	if err := g.closed(); err != nil {
		return nil, err
	}
	return g.Client.ExecuteWorkflow(ctx, options, workflow, args...)
}

func (g *temporalGate) SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error {
	if err := g.closed(); err != nil {
		return err
	}
	return g.Client.SignalWorkflow(ctx, workflowID, runID, signalName, arg)
}

func (g *temporalGate) SignalWithStartWorkflow(ctx context.Context, workflowID, signalName string, signalArg any,
	options client.StartWorkflowOptions, workflow any, workflowArgs ...any) (client.WorkflowRun, error) {
	if err := g.closed(); err != nil {
		return nil, err
	}
	return g.Client.SignalWithStartWorkflow(ctx, workflowID, signalName, signalArg, options, workflow, workflowArgs...)
}

func (g *temporalGate) CancelWorkflow(ctx context.Context, workflowID, runID string) error {
	if err := g.closed(); err != nil {
		return err
	}
	return g.Client.CancelWorkflow(ctx, workflowID, runID)
}

func (g *temporalGate) TerminateWorkflow(ctx context.Context, workflowID, runID, reason string, details ...any) error {
	if err := g.closed(); err != nil {
		return err
	}
	return g.Client.TerminateWorkflow(ctx, workflowID, runID, reason, details...)
}

func (g *temporalGate) QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error) {
	if err := g.closed(); err != nil {
		return nil, err
	}
	return g.Client.QueryWorkflow(ctx, workflowID, runID, queryType, args...)
}

func (g *temporalGate) UpdateWorkflow(ctx context.Context, options client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	if err := g.closed(); err != nil {
		return nil, err
	}
	return g.Client.UpdateWorkflow(ctx, options)
}

// watchTemporal probes Temporal until ctx ends (the first probe is
// Start's).
func (e *Engine) watchTemporal(ctx context.Context) {
	for {
		every := temporalUpEvery
		if e.gate.isAway() {
			every = temporalAwayEvery
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		_ = e.probeTemporal(ctx)
	}
}
