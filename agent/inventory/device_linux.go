package inventory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/host"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/net"
	"golang.org/x/sys/unix"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Where the Linux parts read the system. Tests point the pure readers at
// fixtures instead.
const (
	osReleasePath    = "/etc/os-release"
	osReleaseAltPath = "/usr/lib/os-release"
	machineIDPath    = "/etc/machine-id"
	sysBlockDir      = "/sys/block"
	sysClassBlockDir = "/sys/class/block"
	dmiDir           = "/sys/class/dmi/id"
	bootIDPath       = "/proc/sys/kernel/random/boot_id"
)

func collectOS(_ context.Context, _ *Collector, inv *proto.Inventory) error {
	b, err := os.ReadFile(osReleasePath)
	if errors.Is(err, os.ErrNotExist) {
		b, err = os.ReadFile(osReleaseAltPath)
	}
	if err != nil {
		return err
	}
	rel := parseOSRelease(string(b))
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return fmt.Errorf("uname: %w", err)
	}
	hostname, err := os.Hostname()
	if err != nil {
		return err
	}
	o := &proto.OSInfo{
		Family:        "linux",
		Name:          cmp.Or(rel["PRETTY_NAME"], rel["NAME"]+" "+rel["VERSION"], "Linux"),
		ID:            rel["ID"],
		Version:       cmp.Or(rel["VERSION_ID"], rel["VERSION"]),
		KernelVersion: unix.ByteSliceToString(u.Release[:]),
		Arch:          unix.ByteSliceToString(u.Machine[:]),
		Hostname:      hostname,
		MachineID:     readTrim(machineIDPath),
	}
	inv.OS = o
	return nil
}

func collectHardware(ctx context.Context, _ *Collector, inv *proto.Inventory) error {
	hw := &proto.Hardware{}
	infos, err := cpu.InfoWithContext(ctx)
	if err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	if len(infos) > 0 {
		hw.CPUModel = infos[0].ModelName
	}
	if hw.CPUThreads, err = cpu.CountsWithContext(ctx, true); err != nil {
		return fmt.Errorf("cpu count: %w", err)
	}
	// Physical cores are "when known": some virtual machines do not say.
	hw.CPUCores, _ = cpu.CountsWithContext(ctx, false)
	vm, err := mem.VirtualMemoryWithContext(ctx)
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	hw.MemoryTotalBytes = vm.Total
	if hw.Disks, err = collectDisks(ctx); err != nil {
		return fmt.Errorf("disks: %w", err)
	}
	readDMI(dmiDir, hw)
	if system, role, err := host.VirtualizationWithContext(ctx); err == nil && role == "guest" {
		hw.Virtualization = system
	}
	inv.Hardware = hw
	return nil
}

func collectDisks(ctx context.Context) ([]proto.Disk, error) {
	disks, err := blockDevices(sysBlockDir)
	if err != nil {
		return nil, err
	}
	parts, err := disk.PartitionsWithContext(ctx, false)
	if err != nil {
		return nil, err
	}
	mounts := make([]mount, len(parts))
	for i, p := range parts {
		mounts[i] = mount{Device: p.Device, Mountpoint: p.Mountpoint, FSType: p.Fstype}
	}
	usageOf := func(mp string) (usage, error) {
		u, err := disk.UsageWithContext(ctx, mp)
		if err != nil {
			return usage{}, err
		}
		return usage{Total: u.Total, Used: u.Used, Free: u.Free}, nil
	}
	parentOf := func(name string) string { return partitionParent(sysClassBlockDir, name) }
	return orEmpty(mergeMounts(disks, mounts, usageOf, parentOf)), nil
}

func collectNetwork(ctx context.Context, _ *Collector, inv *proto.Inventory) error {
	ifaces, err := net.InterfacesWithContext(ctx)
	if err != nil {
		return err
	}
	out := make([]proto.NetIface, 0, len(ifaces))
	for _, i := range ifaces {
		n := proto.NetIface{Name: i.Name, MAC: i.HardwareAddr, MTU: i.MTU, Addresses: []string{},
			Up: slices.Contains(i.Flags, "up"), Loopback: slices.Contains(i.Flags, "loopback")}
		for _, a := range i.Addrs {
			n.Addresses = append(n.Addresses, a.Addr)
		}
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b proto.NetIface) int { return cmp.Compare(a.Name, b.Name) })
	inv.Network = out
	return nil
}

func collectUptime(ctx context.Context, _ *Collector, inv *proto.Inventory) error {
	boot, err := host.BootTimeWithContext(ctx)
	if err != nil {
		return fmt.Errorf("boot time: %w", err)
	}
	up, err := host.UptimeWithContext(ctx)
	if err != nil {
		return fmt.Errorf("uptime: %w", err)
	}
	inv.Uptime = &proto.Uptime{
		BootTime:      time.Unix(int64(boot), 0).UTC(),
		UptimeSeconds: int64(up),
		BootID:        readTrim(bootIDPath),
	}
	return nil
}
