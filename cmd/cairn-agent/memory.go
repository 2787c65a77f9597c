package main

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"
	"time"
)

// The agent's resident memory (issue 28: at most 10 MB idle). A running
// agent is mostly idle, and what it holds resident is of two kinds: the
// Go heap, which the inventory collection swells once a minute and the
// runtime gives back to the system only slowly, and the pages of its own
// executable, which start-up code (package initialisation, enrollment,
// the first inventory) faults in and nothing later unmaps. Both are given
// back after start-up and then every trimEvery: the heap by a collection
// that returns freed memory at once (debug.FreeOSMemory), the
// executable's pages by trimExecutable (Linux: madvise MADV_PAGEOUT on its
// file mappings; the pages the agent keeps using are faulted back in from
// the page cache, at no disk read). A soft memory limit (agentMemoryLimit,
// unless GOMEMLIMIT is set) keeps the heap small between two trims.

const (
	// agentMemoryLimit is the Go runtime's soft limit: past it the
	// collector runs more often rather than growing the heap. The runtime
	// bounds the collector's CPU when the live heap is above it (a large
	// transfer or inventory), so it slows nothing down.
	agentMemoryLimit = 8 << 20
	// trimAfter and trimEvery: the first trim once start-up is over, and
	// the cadence after (each trim costs one collection).
	trimAfter = 2 * time.Minute
	trimEvery = 5 * time.Minute
)

// limitMemory sets the soft memory limit unless GOMEMLIMIT chose one.
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(agentMemoryLimit)
	}
}

// trimMemory returns the freed heap and the executable's idle pages to the
// system.
func trimMemory() error {
	debug.FreeOSMemory()
	return trimExecutable()
}

// trimLoop trims after start-up and every trimEvery until ctx ends.
func trimLoop(ctx context.Context, log *slog.Logger) {
	t := time.NewTimer(trimAfter)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := trimMemory(); err != nil {
			log.Debug("could not return the executable's idle pages", "err", err)
		}
		t.Reset(trimEvery)
	}
}
