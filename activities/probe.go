// Package activities holds Temporal activities: methods on structs that
// carry their dependencies. Workflows refer to them through nil pointers.
package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
)

// WorkerIdentity says which worker ran an activity, on which queue, when.
type WorkerIdentity struct {
	Identity  string
	TaskQueue string
	At        time.Time
}

// Probe answers worker probes.
type Probe struct {
	// Identity is the worker's identity (process and queue).
	Identity string
}

// Identify reports the worker that runs it.
func (p *Probe) Identify(ctx context.Context) (WorkerIdentity, error) {
	info := activity.GetInfo(ctx)
	return WorkerIdentity{Identity: p.Identity, TaskQueue: info.TaskQueue, At: time.Now().UTC()}, nil
}
