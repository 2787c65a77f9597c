package main

// Minimal host facts from the standard library, /etc and /proc, so run
// and enroll work before the real collectors exist. At merge,
// defaultHost's fields are replaced: collector by agent/inventory's
// Collector, roles by agent/roles' tracker, fingerprint by
// inventory.Fingerprint, hash by inventory.Hash and synthetic by
// inventory.Synthetic. Note that replacing fingerprint changes what an
// enrolled device sends with refresh: do it before any device enrolls.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	agentruntime "github.com/cairn-rmm/cairn/agent/runtime"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// host is what the agent commands need from the machine.
type host struct {
	collector   agentruntime.Collector
	roles       agentruntime.Roles // nil: no role reports yet
	fingerprint func() (string, error)
	hash        func(proto.Inventory) string
	synthetic   func(n int) proto.Inventory
	hostname    func() (string, error)
	osName      func() string
	bootID      func() string
	// timing overrides the runtime's intervals (zero: production values);
	// tests run the loop in milliseconds with it.
	timing agentruntime.Timing
}

func defaultHost() host {
	return host{
		collector:   &procCollector{},
		fingerprint: machineIDFingerprint,
		hash:        agentruntime.HashInventory,
		synthetic:   agentruntime.SyntheticInventory,
		hostname:    os.Hostname,
		osName:      osPrettyName,
		bootID:      readBootID,
	}
}

// machineIDFingerprint derives the fingerprint from the systemd machine
// ID, which survives reboots and agent reinstalls. It is hashed so the
// raw ID (which some software treats as confidential) never leaves.
func machineIDFingerprint() (string, error) {
	for _, p := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		b, err := os.ReadFile(p)
		if id := strings.TrimSpace(string(b)); err == nil && id != "" {
			sum := sha256.Sum256([]byte("cairn-machine-id:" + id))
			return hex.EncodeToString(sum[:]), nil
		}
	}
	return "", errors.New("no machine ID (/etc/machine-id) to fingerprint this machine")
}

// osPrettyName is os-release's PRETTY_NAME, or the Go OS name.
func osPrettyName() string {
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

// readBootID is the kernel's boot ID ("" where unreadable).
func readBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// procCollector reports the OS and uptime as inventory and memory, uptime
// and CPU load as metrics. Collections it cannot see are left nil, which
// the Engine reads as "not collected" and leaves its rows alone.
type procCollector struct {
	mu              sync.Mutex
	idle, total     uint64 // previous /proc/stat sample
	haveCPUBaseline bool
}

func (c *procCollector) Collect(context.Context) proto.Inventory {
	hostname, _ := os.Hostname()
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	inv := proto.Inventory{OS: &proto.OSInfo{
		Family: runtime.GOOS, Name: osPrettyName(), KernelVersion: strings.TrimSpace(string(kernel)),
		Arch: runtime.GOARCH, Hostname: hostname,
	}}
	if boot := bootTime(); !boot.IsZero() {
		// Uptime seconds are left out: they would change the inventory's
		// hash at every check. The heartbeat carries them.
		inv.Uptime = &proto.Uptime{BootTime: boot, BootID: readBootID()}
	}
	return inv
}

func (c *procCollector) Metrics(context.Context) proto.Metrics {
	m := proto.Metrics{UptimeSeconds: uptimeSeconds(), LoggedInUsers: []string{}}
	mem := meminfo()
	m.MemoryTotalBytes = mem["MemTotal"]
	if avail, ok := mem["MemAvailable"]; ok && avail <= m.MemoryTotalBytes {
		m.MemoryUsedBytes = m.MemoryTotalBytes - avail
	}
	m.CPUPercent = c.cpuPercent()
	return m
}

// cpuPercent is the busy share of all CPUs since the previous call (0 at
// the first call).
func (c *procCollector) cpuPercent() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0
	}
	var total, idle uint64
	for i, f := range fields[1:] {
		v, _ := strconv.ParseUint(f, 10, 64)
		total += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	prevIdle, prevTotal, had := c.idle, c.total, c.haveCPUBaseline
	c.idle, c.total, c.haveCPUBaseline = idle, total, true
	if !had || total <= prevTotal {
		return 0
	}
	busy := float64((total - prevTotal) - (idle - prevIdle))
	return float64(int(busy/float64(total-prevTotal)*1000+0.5)) / 10
}

// bootTime is /proc/stat's btime: whole seconds, stable for the boot.
func bootTime() time.Time {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n > 0 {
				return time.Unix(n, 0).UTC()
			}
		}
	}
	return time.Time{}
}

func uptimeSeconds() int64 {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0
	}
	f, _, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	v, err := strconv.ParseFloat(f, 64)
	if err != nil {
		return 0
	}
	return int64(v)
}

// meminfo reads /proc/meminfo in bytes.
func meminfo() map[string]uint64 {
	out := map[string]uint64{}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		out[k] = n
	}
	return out
}
