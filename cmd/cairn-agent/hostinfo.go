package main

// What the agent commands take from the machine: the inventory collectors
// with their role health (agent/inventory, agent/roles), the fingerprint,
// and the host name, OS name and boot ID enroll and status report.

import (
	"bufio"
	"context"
	"log/slog"
	"os"
	"runtime"
	"strings"

	"github.com/cairn-rmm/cairn/agent/inventory"
	agentoperations "github.com/cairn-rmm/cairn/agent/operations"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
	agentruntime "github.com/cairn-rmm/cairn/agent/runtime"
)

// host is what the agent commands need from the machine.
type host struct {
	collector agentruntime.Collector
	roles     agentruntime.Roles // nil: no role reports yet
	// tracker is roles' tracker, for roles registered at run time (the
	// VPN tunnel); nil: those report nothing.
	tracker     *roles.Tracker
	fingerprint func() (string, error)
	hash        func(proto.Inventory) string
	// ops is what remote operations read (agent/ops): the same collector,
	// asked for one collection at a time.
	ops       agentoperations.Inventory
	synthetic func(n int) proto.Inventory
	// iconOverrides are the software icon overrides the collector applies
	// (fetched on the realtime session's connection); nil for tests.
	iconOverrides *inventory.Overrides
	hostname      func() (string, error)
	osName        func() string
	bootID        func() string
	// timing overrides the runtime's intervals (zero: production values);
	// tests run the loop in milliseconds with it.
	timing agentruntime.Timing
}

func defaultHost() host {
	tracker := roles.New(nil)
	overrides := &inventory.Overrides{}
	inv := inventory.New(tracker, inventory.Options{Overrides: overrides})
	return host{
		iconOverrides: overrides,
		collector:     inventoryCollector{c: inv, log: slog.Default()},
		roles:         tracker,
		tracker:       tracker,
		ops:           inv,
		fingerprint:   inventory.Fingerprint,
		hash:          inventory.Hash,
		synthetic:     inventory.Synthetic,
		hostname:      os.Hostname,
		osName:        osPrettyName,
		bootID:        readBootID,
	}
}

// osPrettyName is os-release's PRETTY_NAME, or the Go OS name; on
// Windows the name the inventory reports.
func osPrettyName() string {
	if runtime.GOOS == "windows" {
		return inventory.OSName()
	}
	f, err := os.Open("/etc/os-release")
	if err != nil {
		return runtime.GOOS
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "PRETTY_NAME="); ok {
			if name := strings.Trim(v, `"'`); name != "" {
				return name
			}
		}
	}
	return runtime.GOOS
}

// readBootID is the kernel's boot ID ("" where unreadable); on Windows
// the boot counter.
func readBootID() string {
	if runtime.GOOS == "windows" {
		return inventory.BootID()
	}
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// inventoryCollector adapts agent/inventory's collector to the runtime:
// a metric it cannot read stays zero and is logged, never fatal.
type inventoryCollector struct {
	c   *inventory.Collector
	log *slog.Logger
}

func (i inventoryCollector) Collect(ctx context.Context) proto.Inventory { return i.c.Collect(ctx) }

func (i inventoryCollector) Metrics(ctx context.Context) proto.Metrics {
	m, err := i.c.Metrics(ctx)
	if err != nil {
		i.log.Debug("heartbeat metrics incomplete", "err", err)
	}
	return m
}
