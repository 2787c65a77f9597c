//go:build linux

package main

import (
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// These read the test machine's own /proc and /etc, which every Linux
// host (and container) has.
func TestHostFacts(t *testing.T) {
	t.Parallel()
	fp, err := machineIDFingerprint()
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{64}$`), fp)
	again, err := machineIDFingerprint()
	require.NoError(t, err)
	require.Equal(t, fp, again, "stable across calls")
	require.NotEmpty(t, osPrettyName())
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f-]{36}$`), readBootID())

	c := &procCollector{}
	m := c.Metrics(context.Background())
	require.Positive(t, m.MemoryTotalBytes)
	require.LessOrEqual(t, m.MemoryUsedBytes, m.MemoryTotalBytes)
	require.Positive(t, m.UptimeSeconds)
	require.Zero(t, m.CPUPercent, "no baseline at the first sample")
	m = c.Metrics(context.Background())
	require.GreaterOrEqual(t, m.CPUPercent, 0.0)
	require.LessOrEqual(t, m.CPUPercent, 100.0)

	inv := c.Collect(context.Background())
	require.Equal(t, "linux", inv.OS.Family)
	require.NotEmpty(t, inv.OS.KernelVersion)
	require.NotNil(t, inv.Uptime)
	require.Nil(t, inv.Software, "not collected, so the Engine keeps its rows")
	require.Equal(t, c.Collect(context.Background()), inv, "an idle machine's inventory hashes the same")
}
