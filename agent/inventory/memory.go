package inventory

import (
	"context"
	"errors"
	"time"
)

// Retries of a memory reading that says the machine has none.
const (
	memoryAttempts = 40
	memoryRetry    = 50 * time.Millisecond
)

var errNoMemory = errors.New("the system reported no physical memory")

// settledMemory calls read until it reports a non-zero total, for at most
// memoryAttempts calls memoryRetry apart. No machine that runs the agent
// has no memory, but Wine's GlobalMemoryStatusEx (kernelbase) answers
// every call within a second of the last one from a process-wide cache
// that it fills only after it has set the time: a call that comes while
// the first one is still reading gets the empty cache, zero, with
// success. The inventory and the heartbeat's metrics both read memory
// when the agent starts, so a loaded machine sees it. The retries outlast
// that second.
func settledMemory[T any](ctx context.Context, read func() (T, uint64, error)) (T, error) {
	var zero T
	for i := 0; ; i++ {
		v, total, err := read()
		if err != nil || total > 0 {
			return v, err
		}
		if i == memoryAttempts-1 {
			return zero, errNoMemory
		}
		t := time.NewTimer(memoryRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return zero, ctx.Err()
		case <-t.C:
		}
	}
}
