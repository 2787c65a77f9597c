package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// Issue 28: a running agent sets a soft memory limit of its own, unless
// the administrator chose one with GOMEMLIMIT.
func TestLimitMemory(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	for _, tc := range []struct {
		env  string
		want int64
	}{
		{"", agentMemoryLimit},
		{"64MiB", before},
	} {
		debug.SetMemoryLimit(before)
		t.Setenv("GOMEMLIMIT", tc.env)
		limitMemory()
		require.Equal(t, tc.want, debug.SetMemoryLimit(-1), "GOMEMLIMIT=%q", tc.env)
	}
}
