package inventory

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

func TestSyntheticDeterministic(t *testing.T) {
	t.Parallel()
	require.Equal(t, Synthetic(42), Synthetic(42))
	require.Equal(t, Hash(Synthetic(42)), Hash(Synthetic(42)))
}

func TestSyntheticVaries(t *testing.T) {
	t.Parallel()
	hashes := map[string]int{}
	hostnames := map[string]bool{}
	for n := range 200 {
		inv := Synthetic(n)
		h := Hash(inv)
		prev, dup := hashes[h]
		require.False(t, dup, "agents %d and %d have the same inventory", prev, n)
		hashes[h] = n
		hostnames[inv.OS.Hostname] = true
	}
	require.Len(t, hostnames, 200)
}

func TestSyntheticLooksReal(t *testing.T) {
	t.Parallel()
	for n := range 50 {
		inv := Synthetic(n)
		require.GreaterOrEqual(t, len(inv.Software), 250, n)
		require.LessOrEqual(t, len(inv.Software), 500, n)
		require.InDelta(t, 50, len(inv.Services), 12, n)
		require.InDelta(t, 100, len(inv.Processes), 30, n)
		require.LessOrEqual(t, len(inv.Patches), 8, n)
		require.NotNil(t, inv.Patches, "collected even when none are pending")
		require.NotNil(t, inv.Sessions)
		require.NotZero(t, inv.Hardware.MemoryTotalBytes)
		require.Positive(t, inv.Uptime.UptimeSeconds)
		for _, p := range inv.Patches {
			require.Equal(t, proto.PatchPending, p.State)
			require.Equal(t, p.Package+" "+p.CandidateVersion, p.Title)
			require.Contains(t, []string{SourceApt, SourceDnf}, p.Source)
		}
		pids := map[int]bool{}
		for _, p := range inv.Processes {
			require.False(t, pids[p.PID], "agent %d: PID %d twice", n, p.PID)
			pids[p.PID] = true
		}
	}
}

func BenchmarkSynthetic(b *testing.B) {
	for i := 0; b.Loop(); i++ {
		_ = Hash(Synthetic(i))
	}
}
