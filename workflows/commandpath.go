package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The command-path kit: what every workflow that sends a request to an
// agent shares. Its values are part of the commands those workflows
// emit (saved histories replay against them): change none of them
// without workflow.GetVersion.

// withRecording is for the short database writes around a request
// (recording it in the device's activity, applying the answer): local
// activities in the process running the workflow, which cost no
// task-queue round trip and a fraction of the history events.
func withRecording(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: 10 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
	})
}

// withSending is for the request to the agent (SendToAgent, SendScript):
// a real activity, since whichever process holds the agent's socket
// completes it, heartbeated by that holder every operationHeartbeat and
// given timeout in all. queue is the device's site queue, or "" for the
// workflow's own.
func withSending(ctx workflow.Context, timeout time.Duration, queue string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              queue,
		ScheduleToCloseTimeout: timeout,
		StartToCloseTimeout:    timeout,
		HeartbeatTimeout:       operationHeartbeat,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2,
			MaximumInterval: 5 * time.Second},
	})
}

// awaitChange waits for what follows a record the workflow watches in
// PostgreSQL: a signal on changed (every one pending is taken; the last
// one's payload is returned, with true) or, at most after recheck, the
// timer that makes the workflow read the record again in case a signal
// was lost (the Engine died between recording and signalling), which
// returns false.
func awaitChange[T any](ctx workflow.Context, changed workflow.ReceiveChannel, recheck time.Duration) (last T, signalled bool) {
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(workflow.NewTimer(timerCtx, recheck), func(workflow.Future) {})
	sel.AddReceive(changed, func(c workflow.ReceiveChannel, _ bool) {
		signalled = true
		c.Receive(ctx, &last)
		for {
			var next T
			if !c.ReceiveAsync(&next) {
				break
			}
			last = next
		}
	})
	sel.Select(ctx)
	return last, signalled
}
