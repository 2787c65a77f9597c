package inventory

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

func TestExplain(t *testing.T) {
	t.Parallel()
	for stderr, want := range map[string]string{
		"":                                 "no error output",
		"\n  \n":                           "no error output",
		"warning: x\n":                     "warning: x",
		"W: a\nE: b\n":                     "E: b",
		"Last metadata\nError: no cache\n": "Error: no cache",
		"  first line  \nsecond\n":         "first line",
	} {
		require.Equal(t, want, explain(stderr), "%q", stderr)
	}
}

func TestPatchCache(t *testing.T) {
	t.Parallel()
	now := time.Now()
	c := patchCache{source: "apt", signature: "s1", at: now.Add(-time.Minute), rows: []proto.PatchEntry{}}
	require.True(t, c.fresh("apt", "s1", now, time.Hour), "an empty, non-nil reading is a reading")
	require.False(t, c.fresh("apt", "s2", now, time.Hour), "the package database changed")
	require.False(t, c.fresh("dnf", "s1", now, time.Hour))
	require.False(t, c.fresh("apt", "s1", now, 30*time.Second), "too old")
	require.False(t, patchCache{}.fresh("", "", now, time.Hour), "nothing read yet")
}

func TestPercent(t *testing.T) {
	t.Parallel()
	require.Equal(t, 50.0, percent(1, 2*time.Second))
	require.Equal(t, 200.0, percent(4, 2*time.Second), "a process busy on two CPUs")
	require.Equal(t, 33.3, percent(1, 3*time.Second))
	require.Zero(t, percent(-1, time.Second), "a reused key never goes negative")
	require.Zero(t, percent(1, 0))
}

func TestCPUPercent(t *testing.T) {
	t.Parallel()
	prev := cpuSample{busy: 100, total: 400}
	require.Equal(t, 25.0, cpuPercent(cpuSample{}, prev), "first call: since boot")
	require.Equal(t, 50.0, cpuPercent(prev, cpuSample{busy: 150, total: 500}))
	require.Zero(t, cpuPercent(prev, prev), "no time passed")
	require.Equal(t, 100.0, cpuPercent(prev, cpuSample{busy: 300, total: 450}), "clamped")
}

func TestFingerprintOf(t *testing.T) {
	t.Parallel()
	a, err := fingerprintOf([][2]string{{"machine-id", "abc"}, {"product-uuid", ""}})
	require.NoError(t, err)
	b, err := fingerprintOf([][2]string{{"machine-id", "abc"}})
	require.NoError(t, err)
	require.Equal(t, a, b, "an unreadable source is left out")
	c, err := fingerprintOf([][2]string{{"product-uuid", "abc"}})
	require.NoError(t, err)
	require.NotEqual(t, a, c, "sources are named, so equal values of different sources differ")
	// Pinned to `printf 'cairn-fingerprint-v1\nmachine-id=abc' | sha256sum`:
	// the Engine compares fingerprints across agent versions, so this
	// value changes only with fingerprintVersion.
	require.Equal(t, "3352d4df2e4ca30e3e748c23672c9015d4aadb90ecaa9d315ae4ce72a71f95a2", a)
	_, err = fingerprintOf([][2]string{{"machine-id", ""}})
	require.Error(t, err)
}
