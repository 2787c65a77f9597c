//go:build !windows

package inventory

import (
	"cmp"
	"context"
	"os/user"
	"slices"
	"strconv"
	"time"

	"github.com/shirou/gopsutil/v4/process"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// collectProcesses lists the running processes. CPU percent is of one
// logical CPU (a process busy on two shows 200) over the time since the
// previous collection; a process not seen then shows its average since it
// started. Processes that end while being read are left out.
func collectProcesses(ctx context.Context, c *Collector, inv *proto.Inventory) error {
	pids, err := process.PidsWithContext(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	prev := c.procs
	c.mu.Unlock()

	now := time.Now()
	next := procSamples{at: now, cpu: make(map[procKey]float64, len(pids))}
	names := map[uint32]string{}
	out := make([]proto.Process, 0, len(pids))
	for _, pid := range pids {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, err := process.NewProcessWithContext(ctx, pid)
		if err != nil {
			continue
		}
		created, err := p.CreateTimeWithContext(ctx) // milliseconds since the epoch
		if err != nil {
			continue
		}
		name, err := p.NameWithContext(ctx)
		if err != nil {
			continue
		}
		row := proto.Process{PID: int(pid), Name: name, StartedAt: time.UnixMilli(created).UTC()}
		if ppid, err := p.PpidWithContext(ctx); err == nil {
			row.PPID = int(ppid)
		}
		// Kernel threads have no command line; that is not an error.
		row.Command, _ = p.CmdlineWithContext(ctx)
		if m, err := p.MemoryInfoWithContext(ctx); err == nil {
			row.RSSBytes = m.RSS
		}
		if uids, err := p.UidsWithContext(ctx); err == nil && len(uids) > 0 {
			row.User = userName(names, uids[min(1, len(uids)-1)]) // effective UID, as ps shows
		}
		if t, err := p.TimesWithContext(ctx); err == nil {
			key := procKey{pid, created}
			used := t.User + t.System
			next.cpu[key] = used
			if before, ok := prev.cpu[key]; ok && now.After(prev.at) {
				row.CPUPercent = percent(used-before, now.Sub(prev.at))
			} else if now.UnixMilli() > created {
				row.CPUPercent = percent(used, now.Sub(time.UnixMilli(created)))
			}
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b proto.Process) int { return cmp.Compare(a.PID, b.PID) })

	c.mu.Lock()
	c.procs = next
	c.mu.Unlock()
	inv.Processes = out
	return nil
}

// userName resolves a UID once per collection; a UID without an account
// (containers, deleted users) is shown as its number, as ps does.
func userName(cache map[uint32]string, uid uint32) string {
	if n, ok := cache[uid]; ok {
		return n
	}
	id := strconv.FormatUint(uint64(uid), 10)
	n := id
	if u, err := user.LookupId(id); err == nil {
		n = u.Username
	}
	cache[uid] = n
	return n
}
