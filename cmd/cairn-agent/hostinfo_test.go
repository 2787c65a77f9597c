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
	h := defaultHost()
	fp, err := h.fingerprint()
	require.NoError(t, err)
	again, err := h.fingerprint()
	require.NoError(t, err)
	require.Equal(t, fp, again, "stable across calls")
	require.NotEmpty(t, osPrettyName())
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f-]{36}$`), readBootID())

	m := h.collector.Metrics(context.Background())
	require.Positive(t, m.MemoryTotalBytes)
	require.LessOrEqual(t, m.MemoryUsedBytes, m.MemoryTotalBytes)
	require.Positive(t, m.UptimeSeconds)

	inv := h.collector.Collect(context.Background())
	require.Equal(t, "linux", inv.OS.Family)
	require.NotEmpty(t, inv.OS.KernelVersion)
	require.NotEmpty(t, inv.Software, "the real collectors read dpkg or rpm")
	require.NotEmpty(t, h.roles.Snapshot(), "collectors publish role health")
}
