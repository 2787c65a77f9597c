package workflowclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devtemporal"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

var temporalClient client.Client

func TestMain(m *testing.M) {
	os.Exit(func() int {
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		srv, err := devtemporal.Start(devtemporal.Options{LogLevel: slog.LevelError, Logger: quiet, SearchAttributes: workflows.SearchAttributes})
		if err != nil {
			fmt.Fprintln(os.Stderr, "start Temporal:", err)
			return 1
		}
		defer srv.Stop()
		temporalClient, err = client.Dial(client.Options{HostPort: srv.Address, Namespace: srv.Namespace,
			Logger: tlog.NewStructuredLogger(quiet)})
		if err != nil {
			fmt.Fprintln(os.Stderr, "dial Temporal:", err)
			return 1
		}
		defer temporalClient.Close()
		return m.Run()
	}())
}

// echo is a workflow whose result says which start it ran for.
func echo(_ workflow.Context, in string) (string, error) { return in, nil }

type setupResult struct {
	queue string
}

// setup runs a worker of echo on a queue of the test's own.
func setup(t *testing.T) setupResult {
	t.Helper()
	queue := "workflowclient-" + uuid.NewString()[:8]
	w := worker.New(temporalClient, queue, worker.Options{})
	w.RegisterWorkflow(echo)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return setupResult{queue: queue}
}

func (s setupResult) options() client.StartWorkflowOptions {
	return client.StartWorkflowOptions{ID: "echo:" + uuid.NewString(), TaskQueue: s.queue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE}
}

// A start whose workflow already ran under the ID (a retried request, a
// start whose answer was lost) is the same start: no error, and the run
// it returns is the first one, with the first one's result.
func TestStartAlreadyStartedIsTheExistingRun(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx := context.Background()
	opts := s.options()
	first, err := workflowclient.Start(ctx, temporalClient, opts, echo, "first")
	require.NoError(t, err)
	var got string
	require.NoError(t, first.Get(ctx, &got))
	require.Equal(t, "first", got)

	again, err := workflowclient.Start(ctx, temporalClient, opts, echo, "second")
	require.NoError(t, err, "AlreadyStarted is success")
	require.Equal(t, opts.ID, again.GetID())
	require.Equal(t, first.GetRunID(), again.GetRunID())
	require.NoError(t, again.Get(ctx, &got))
	require.Equal(t, "first", got, "no second run")
}

// flakyTemporal is the real client whose first failures starts fail as an
// overloaded frontend answers (ResourceExhausted) before reaching it.
type flakyTemporal struct {
	client.Client
	failures atomic.Int32
	err      error
}

func (c *flakyTemporal) ExecuteWorkflow(ctx context.Context, opts client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	if c.failures.Add(-1) >= 0 {
		return nil, c.err
	}
	return c.Client.ExecuteWorkflow(ctx, opts, wf, args...)
}

// A start Temporal refuses for a moment is tried again and goes through.
func TestStartRetriesATransientFailure(t *testing.T) {
	t.Parallel()
	for name, err := range map[string]error{
		"exhausted":         serviceerror.NewResourceExhausted(enums.RESOURCE_EXHAUSTED_CAUSE_RPS_LIMIT, "busy"),
		"deadline exceeded": serviceerror.NewDeadlineExceeded("no answer"),
		"unavailable":       serviceerror.NewUnavailable("restarting"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := setup(t)
			ctx := context.Background()
			tc := &flakyTemporal{Client: temporalClient, err: err}
			tc.failures.Store(2)
			run, err := workflowclient.Start(ctx, tc, s.options(), echo, "through")
			require.NoError(t, err)
			var got string
			require.NoError(t, run.Get(ctx, &got))
			require.Equal(t, "through", got)
			require.EqualValues(t, -1, tc.failures.Load(), "two refusals, then the start")
		})
	}
}

// A start that fails for a reason retrying cannot fix is not retried.
func TestStartDoesNotRetryARefusal(t *testing.T) {
	t.Parallel()
	tc := &flakyTemporal{err: serviceerror.NewInvalidArgument("bad input")}
	tc.failures.Store(10)
	_, err := workflowclient.Start(context.Background(), tc, client.StartWorkflowOptions{ID: "x", TaskQueue: "q"}, echo, "")
	var invalid *serviceerror.InvalidArgument
	require.ErrorAs(t, err, &invalid)
	require.EqualValues(t, 9, tc.failures.Load(), "one try")
}

// refusingTemporal answers every start with err, as a Temporal too busy
// (or away) does; the rest of the client is never called.
type refusingTemporal struct {
	client.Client
	err   error
	tries atomic.Int32
}

func (c *refusingTemporal) ExecuteWorkflow(context.Context, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	c.tries.Add(1)
	return nil, c.err
}

func (c *refusingTemporal) SignalWorkflow(context.Context, string, string, string, any) error {
	c.tries.Add(1)
	return c.err
}

// A Temporal that stays busy or away is answered with a Retry-After,
// which clients (and the API tests) honour before trying again: unavailable
// when it did not take the call in time, temporal_unavailable when it
// cannot be reached. Every starter answers the same (they used to
// disagree: only JobRunStarter retried, and the trust, flow and
// enrollment starters passed Temporal's error on as it came).
func TestBusyStartSaysWhenToRetry(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		err  error
		code string
	}{
		"exhausted":         {serviceerror.NewResourceExhausted(0, "busy"), cairn.ECodeUnavailable},
		"deadline exceeded": {serviceerror.NewDeadlineExceeded("no answer"), cairn.ECodeUnavailable},
		"unavailable":       {serviceerror.NewUnavailable("gate closed"), workflowclient.ECodeTemporalUnavailable},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tc := &refusingTemporal{err: c.err}
			ctx := context.Background()
			for starter, start := range map[string]func() error{
				"job run": func() error {
					return workflowclient.JobRunStarter{Client: tc}.Start(ctx, workflows.JobRunInput{RunID: "run-1"})
				},
				"trust": func() error {
					return workflowclient.TrustStarter{Client: tc}.Start(ctx, workflows.TrustActionInput{GUID: "g", Action: "quarantine"})
				},
				"flow": func() error { return workflowclient.FlowStarter{Client: tc}.StartFlow(ctx, "run-1") },
				"enrollment": func() error {
					return workflowclient.EnrollmentStarter{Client: tc}.StartApproval(ctx, "a-1", time.Now())
				},
			} {
				tc.tries.Store(0)
				got := start()
				var e *cairn.Error
				require.ErrorAs(t, got, &e, starter)
				require.Equal(t, c.code, e.Code, starter)
				require.Equal(t, workflowclient.RetryAfterSeconds, e.RetryAfterSeconds, starter)
				require.EqualValues(t, 4, tc.tries.Load(), "%s: a busy start is tried again before answering", starter)
			}
			var e *cairn.Error

			// A signal follows the same policy.
			tc.tries.Store(0)
			err := workflowclient.AgentUpdateStarter{Client: tc}.Progress(context.Background(), "guid", "op", "running")
			require.ErrorAs(t, err, &e)
			require.Equal(t, c.code, e.Code)
			require.EqualValues(t, 4, tc.tries.Load())
		})
	}
}

// A caller that stops waiting gets the busy answer too: the start may
// have happened, and sending it again is safe.
func TestStartGivenUpIsBusy(t *testing.T) {
	t.Parallel()
	tc := &refusingTemporal{err: serviceerror.NewResourceExhausted(0, "busy")}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := workflowclient.Start(ctx, tc, client.StartWorkflowOptions{ID: "x", TaskQueue: "q"}, echo, "")
	var e *cairn.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, cairn.ECodeUnavailable, e.Code)
	require.Positive(t, e.RetryAfterSeconds)
}

// Errors that are not Temporal being busy or away are no answer of
// Unavailable's.
func TestUnavailableIsOnlyBusyOrAway(t *testing.T) {
	t.Parallel()
	for _, err := range []error{errors.New("boom"), serviceerror.NewNotFound("gone"), context.Canceled,
		serviceerror.NewWorkflowExecutionAlreadyStarted("started", "", "run")} {
		require.Nil(t, workflowclient.Unavailable(err), "%v", err)
	}
}

// Every starter whose workflow already ran under its ID answers success,
// as Start does (they used to disagree: most answered AlreadyStarted as
// an error). The first run is terminated so the second start meets a
// closed workflow, which REJECT_DUPLICATE refuses.
func TestStartersTakeAlreadyStartedAsSuccess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	target := devices.OperationTarget{GUID: cairn.DeviceGUID("guid-" + uuid.NewString()[:8]), Hostname: "h", SiteID: 1, SiteSlug: "nowhere-" + uuid.NewString()[:8]}
	terminate := func(id string) {
		require.NoError(t, temporalClient.TerminateWorkflow(ctx, id, "", "test"))
	}
	t.Run("operation", func(t *testing.T) {
		r := workflowclient.OperationRunner{Client: temporalClient, Grants: testGranter{}}
		in := workflows.OperationInput{OperationID: cairn.OperationID(uuid.NewString()), Target: target, Type: "service_control", Kind: "service_restart"}
		first, err := r.Start(ctx, in)
		require.NoError(t, err)
		terminate(first.GetID())
		again, err := r.Start(ctx, in)
		require.NoError(t, err)
		require.Equal(t, first.GetRunID(), again.GetRunID())
	})
	t.Run("transfer", func(t *testing.T) {
		s := workflowclient.TransferStarter{Client: temporalClient, Grants: testGranter{}}
		in := workflows.FileTransferInput{TransferID: cairn.TransferID(uuid.NewString()), Target: target, Kind: "file_download"}
		require.NoError(t, s.Start(ctx, in))
		terminate(workflows.FileTransferWorkflowID(in.TransferID))
		require.NoError(t, s.Start(ctx, in))
	})
	t.Run("rerun", func(t *testing.T) {
		s := workflowclient.JobScheduler{Client: temporalClient, Prefix: "test-" + uuid.NewString()[:8] + ":"}
		job := scheduledjobs.Job{ID: 7, Kind: scheduledjobs.KindScript}
		runID := uuid.NewString()
		require.NoError(t, s.Start(ctx, job, cairn.RunID(runID), "admin"))
		terminate(s.ScheduleID(job.ID) + ":rerun:" + runID)
		require.NoError(t, s.Start(ctx, job, cairn.RunID(runID), "admin"))
	})
}

// heldTemporal holds every start until release is closed, counting the
// starts in flight at once.
type heldTemporal struct {
	client.Client
	release           chan struct{}
	inFlight, highest atomic.Int32
	started           atomic.Int32
}

func (c *heldTemporal) ExecuteWorkflow(ctx context.Context, opts client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	n := c.inFlight.Add(1)
	defer c.inFlight.Add(-1)
	for h := c.highest.Load(); n > h && !c.highest.CompareAndSwap(h, n); h = c.highest.Load() {
	}
	c.started.Add(1)
	select {
	case <-c.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return c.Client.ExecuteWorkflow(ctx, opts, wf, args...)
}

// A fleet's worth of starts at once reaches Temporal at most
// StartsInFlight at a time; the rest wait their turn in the Engine
// rather than piling onto Temporal, and every one goes through.
func TestStartsArePacedByTheEngine(t *testing.T) {
	t.Parallel()
	s := setup(t)
	tc := &heldTemporal{Client: temporalClient, release: make(chan struct{})}
	const starts = 4 * workflowclient.StartsInFlight
	errs := make(chan error, starts)
	for i := range starts {
		go func() {
			opts := s.options()
			_, err := workflowclient.Start(context.Background(), tc, opts, echo, fmt.Sprint(i))
			errs <- err
		}()
	}
	require.Eventually(t, func() bool { return tc.started.Load() == workflowclient.StartsInFlight }, time.Minute, 10*time.Millisecond,
		"the first starts reach Temporal")
	require.Never(t, func() bool { return tc.started.Load() > workflowclient.StartsInFlight }, 300*time.Millisecond, 10*time.Millisecond,
		"no more while they are in flight")
	close(tc.release)
	for range starts {
		require.NoError(t, <-errs)
	}
	require.EqualValues(t, workflowclient.StartsInFlight, tc.highest.Load())
}

// heldRuns answers every start at once with a run whose outcome is held
// until release is closed, counting the waits on outcomes at once.
type heldRuns struct {
	client.Client
	release          chan struct{}
	waiting, highest atomic.Int32
}

func (c *heldRuns) ExecuteWorkflow(_ context.Context, opts client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	return &heldRun{c: c, id: opts.ID}, nil
}

type heldRun struct {
	client.WorkflowRun
	c  *heldRuns
	id string
}

func (r *heldRun) GetID() string { return r.id }

func (r *heldRun) Get(ctx context.Context, _ any) error {
	n := r.c.waiting.Add(1)
	defer r.c.waiting.Add(-1)
	for h := r.c.highest.Load(); n > h && !r.c.highest.CompareAndSwap(h, n); h = r.c.highest.Load() {
	}
	select {
	case <-r.c.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A fleet's worth of operations requested at once are all started, but
// at most OperationsWaiting of them wait on Temporal for their outcome;
// the others wait their turn in the Engine, and one whose wait runs out
// first is answered as still running (202), never as a failure.
func TestOperationWaitsAreBoundedByTheEngine(t *testing.T) {
	t.Parallel()
	tc := &heldRuns{release: make(chan struct{})}
	r := workflowclient.OperationRunner{Client: tc, Grants: testGranter{}}
	target := devices.OperationTarget{GUID: cairn.DeviceGUID("guid-" + uuid.NewString()[:8]), Hostname: "h", SiteID: 1, SiteSlug: "s"}
	run := func(wait time.Duration) error {
		_, err := r.RunWithin(context.Background(), workflows.OperationInput{OperationID: cairn.OperationID(uuid.NewString()),
			Target: target, Type: "service_control", Kind: "service_restart"}, wait)
		return err
	}
	const ops = 3 * workflowclient.OperationsWaiting
	errs := make(chan error, ops)
	for range ops {
		go func() { errs <- run(time.Hour) }()
	}
	require.Eventually(t, func() bool { return tc.waiting.Load() == workflowclient.OperationsWaiting }, time.Minute, 10*time.Millisecond,
		"the first operations wait on their outcome")
	// One more, with a short wait, gets no turn: it is still running.
	var pending *workflowclient.OperationPending
	require.ErrorAs(t, run(50*time.Millisecond), &pending)
	close(tc.release)
	for range ops {
		require.NoError(t, <-errs)
	}
	require.EqualValues(t, workflowclient.OperationsWaiting, tc.highest.Load(), "never more waits at once")
}
