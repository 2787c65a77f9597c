package inventory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/host"
	"github.com/shirou/gopsutil/v4/mem"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// cpuSample is the machine's cumulative CPU time at one Metrics call.
type cpuSample struct {
	busy, total float64
}

func sampleCPU(t cpu.TimesStat) cpuSample {
	// Guest time is already counted in user time by the Linux kernel, so it
	// is left out of the total (gopsutil's Total adds it again).
	total := t.User + t.System + t.Idle + t.Nice + t.Iowait + t.Irq + t.Softirq + t.Steal
	return cpuSample{busy: total - t.Idle - t.Iowait, total: total}
}

// cpuPercent is the busy share of the whole machine (0..100) between two
// samples.
func cpuPercent(prev, cur cpuSample) float64 {
	dt := cur.total - prev.total
	if dt <= 0 {
		return 0
	}
	p := (cur.busy - prev.busy) / dt * 100
	return math.Round(math.Min(100, math.Max(0, p))*10) / 10
}

// Metrics returns the heartbeat's light metrics: CPU busy percent of the
// whole machine (0..100) since the previous call (since boot on the first
// call), memory used and total, uptime, and the names of logged-in users
// from utmp (Windows: the users of the WTS sessions; sorted, each once). It reads a few /proc files and utmp, so
// it is cheap enough for every heartbeat; only where utmp does not exist
// and logind runs does gopsutil ask loginctl instead. A part that cannot
// be read stays zero (users nil) and is named in the error; the rest is
// still returned.
func (c *Collector) Metrics(ctx context.Context) (proto.Metrics, error) {
	var m proto.Metrics
	var errs []error
	if times, err := cpu.TimesWithContext(ctx, false); err != nil || len(times) == 0 {
		errs = append(errs, fmt.Errorf("cpu: %w", cmp.Or(err, errors.New("no CPU times"))))
	} else {
		cur := sampleCPU(times[0])
		c.mu.Lock()
		prev := cpuSample{}
		if c.cpuPrev != nil {
			prev = *c.cpuPrev
		}
		c.cpuPrev = &cur
		c.mu.Unlock()
		m.CPUPercent = cpuPercent(prev, cur)
	}
	vm, err := settledMemory(ctx, func() (*mem.VirtualMemoryStat, uint64, error) {
		vm, err := mem.VirtualMemoryWithContext(ctx)
		if err != nil {
			return nil, 0, err
		}
		return vm, vm.Total, nil
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("memory: %w", err))
	} else {
		m.MemoryUsedBytes, m.MemoryTotalBytes = vm.Used, vm.Total
	}
	if up, err := host.UptimeWithContext(ctx); err != nil {
		errs = append(errs, fmt.Errorf("uptime: %w", err))
	} else {
		m.UptimeSeconds = int64(up)
	}
	if users, err := loggedInUsers(ctx); err != nil {
		errs = append(errs, fmt.Errorf("users: %w", err))
	} else {
		m.LoggedInUsers = users
	}
	return m, errors.Join(errs...)
}
