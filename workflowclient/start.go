// Package workflowclient starts, signals and schedules Cairn's workflows
// from outside them (the API, the Engine's set-up, activities that start
// other workflows). It holds every type that needs a Temporal client, so
// package workflows holds only deterministic workflow code.
//
// Every start goes through Start: one retry policy for a Temporal that is
// busy or briefly away, a workflow that already exists under the ID is
// the start having happened (workflow IDs are the idempotency key), and a
// Temporal that stays busy or away becomes a *cairn.Error the API answers
// 503 with Retry-After (Unavailable).
package workflowclient

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn"
)

// ECodeTemporalUnavailable: Temporal cannot be reached (the Engine's
// health probe failed, or its frontend refuses connections); sign-in and
// agent callbacks keep working. The API answers it 503.
const ECodeTemporalUnavailable = "temporal_unavailable"

// RetryAfterSeconds is the Retry-After of a Temporal that is busy or away:
// long enough for a stall to pass.
const RetryAfterSeconds = 5

// The retry policy of every start and signal: attempts tries, each
// bounded by attemptTimeout, waiting backoff times the attempt number in
// between. The SDK already retries a refused connection within one call;
// these retries cover a call that ran out of time or capacity.
var (
	attempts       = 4
	attemptTimeout = 10 * time.Second
	backoff        = 500 * time.Millisecond
)

// Unavailable maps an error of a call to Temporal that the caller may send
// again later to the answer a client gets (503 with Retry-After):
// temporal_unavailable when Temporal cannot be reached, unavailable when
// it did not take the call in time or had no capacity for it. Any other
// error gives nil. It is the one place that decides this; the API's error
// mapping and every starter use it.
func Unavailable(err error) *cairn.Error {
	var (
		unreachable *serviceerror.Unavailable
		exhausted   *serviceerror.ResourceExhausted
		deadline    *serviceerror.DeadlineExceeded
		e           *cairn.Error
	)
	switch {
	case errors.As(err, &unreachable):
		e = cairn.Errorf(ECodeTemporalUnavailable, "durable operations are unavailable while the Engine cannot reach Temporal; try again shortly")
	case errors.As(err, &exhausted), errors.As(err, &deadline), errors.Is(err, errBusy):
		e = cairn.Errorf(cairn.ECodeUnavailable, "the Engine is too busy to start or reach the operation now; try again")
	default:
		return nil
	}
	e.RetryAfterSeconds = RetryAfterSeconds
	return e
}

// StartsInFlight bounds the calls this process has in flight to Temporal
// through Start, SignalWithStart and Signal. A caller past the bound
// waits its turn (within its own context) instead of adding a call that
// Temporal would queue behind the others until their deadlines pass: the
// Engine paces its own starts, so a fleet's worth of requests sent at
// once is served at Temporal's rate rather than answered 503
// (docs/benchmarks.md "One operation to 1,000 agents").
const StartsInFlight = 32

// startGate holds a token per call in flight (StartsInFlight).
var startGate = make(chan struct{}, StartsInFlight)

// errBusy stands for a call that ran out of time: its own attempt bound,
// or the caller's context ending before Temporal confirmed.
var errBusy = serviceerror.NewDeadlineExceeded("Temporal did not answer in time")

// transient reports an error worth one more attempt.
func transient(err error) bool {
	return Unavailable(err) != nil
}

// retry calls do under the retry policy. An attempt that runs out of its
// own time counts as busy; when ctx ends first, the answer is busy too
// (the call may still have happened: every call here is idempotent, so
// the client may send it again). A last transient error becomes
// Unavailable's answer; any other error is returned as it came.
func retry(ctx context.Context, do func(ctx context.Context) error) error {
	var err error
	for attempt := range attempts {
		if attempt > 0 {
			t := time.NewTimer(time.Duration(attempt) * backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return Unavailable(errBusy)
			case <-t.C:
			}
		}
		// The attempt's own time starts once it has its turn.
		select {
		case startGate <- struct{}{}:
		case <-ctx.Done():
			return Unavailable(errBusy)
		}
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err = do(actx)
		timedOut := actx.Err() != nil
		cancel()
		<-startGate
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return Unavailable(errBusy)
		}
		if timedOut && errors.Is(err, context.DeadlineExceeded) {
			err = errors.Join(errBusy, err)
		}
		if !transient(err) {
			return err
		}
	}
	return errors.Join(Unavailable(err), err)
}

// Start starts workflow with input under opts (whose ID names the
// workflow: the idempotency key) and returns its run. A workflow that
// already exists under the ID is success: its run is returned, so a
// retried start, or a start that Temporal took although its answer was
// lost, has the same outcome as the first. Temporal busy or away is tried
// again under the retry policy, then answered with Unavailable's error.
func Start(ctx context.Context, c client.Client, opts client.StartWorkflowOptions, workflow any, input any) (client.WorkflowRun, error) {
	// The SDK would hand back the existing run itself; asking for the
	// error keeps the rule here, where every start sees it.
	opts.WorkflowExecutionErrorWhenAlreadyStarted = true
	var run client.WorkflowRun
	err := retry(ctx, func(actx context.Context) error {
		var err error
		run, err = c.ExecuteWorkflow(actx, opts, workflow, input)
		return err
	})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return c.GetWorkflow(ctx, opts.ID, started.RunId), nil
	}
	if err != nil {
		return nil, err
	}
	return run, nil
}

// SignalWithStart sends signal (with arg) to the workflow opts names,
// starting it with input first if it does not run, under Start's retry
// policy and answers.
func SignalWithStart(ctx context.Context, c client.Client, opts client.StartWorkflowOptions, signal string, arg any,
	workflow any, input any) (client.WorkflowRun, error) {
	var run client.WorkflowRun
	err := retry(ctx, func(actx context.Context) error {
		var err error
		run, err = c.SignalWithStartWorkflow(actx, opts.ID, signal, arg, opts, workflow, input)
		return err
	})
	return run, err
}

// Signal sends signal (with arg) to the running workflow id under the
// retry policy. A workflow that no longer runs is fine: whatever the
// signal says no longer concerns it.
func Signal(ctx context.Context, c client.Client, id, signal string, arg any) error {
	err := retry(ctx, func(actx context.Context) error {
		return c.SignalWorkflow(actx, id, "", signal, arg)
	})
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	return err
}
