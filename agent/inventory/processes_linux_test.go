package inventory

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

func TestProcessCPUOverInterval(t *testing.T) {
	t.Parallel()
	c := newCollector(roles.New(nil), Options{}, nil)
	self := func() proto.Process {
		t.Helper()
		var inv proto.Inventory
		require.NoError(t, collectProcesses(t.Context(), c, &inv))
		i := slices.IndexFunc(inv.Processes, func(p proto.Process) bool { return p.PID == os.Getpid() })
		require.GreaterOrEqual(t, i, 0)
		return inv.Processes[i]
	}
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		// burn CPU so this process has some to show
	}
	require.Positive(t, self().CPUPercent, "first sight: average since the process started")

	// Make the previous sample claim more CPU time than the process has
	// used: a delta-based figure is then 0, an average since start is not.
	c.mu.Lock()
	for k := range c.procs.cpu {
		if int(k.pid) == os.Getpid() {
			c.procs.cpu[k] = 1e9
		}
	}
	c.mu.Unlock()
	require.Zero(t, self().CPUPercent, "later collections: use since the previous one")
}
