package inventory

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// synthDistro is an operating system a simulated agent may run.
type synthDistro struct {
	id, name, version, kernel string
	software, patches         string // package and update sources
}

var synthDistros = []synthDistro{
	{"debian", "Debian GNU/Linux 12 (bookworm)", "12", "6.1.0-%d-amd64", SourceDpkg, SourceApt},
	{"ubuntu", "Ubuntu 22.04.5 LTS", "22.04", "5.15.0-%d-generic", SourceDpkg, SourceApt},
	{"ubuntu", "Ubuntu 24.04.2 LTS", "24.04", "6.8.0-%d-generic", SourceDpkg, SourceApt},
	{"rhel", "Red Hat Enterprise Linux 9.5 (Plow)", "9.5", "5.14.0-%d.el9_5.x86_64", SourceRPM, SourceDnf},
	{"rocky", "Rocky Linux 9.5 (Blue Onyx)", "9.5", "5.14.0-%d.el9_5.x86_64", SourceRPM, SourceDnf},
}

var synthCPUs = []string{
	"Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", "Intel(R) Core(TM) i7-10700 CPU @ 2.90GHz",
	"AMD EPYC 7543 32-Core Processor", "AMD Ryzen 7 5800X 8-Core Processor", "Intel(R) Core(TM) i5-8500T CPU @ 2.10GHz",
}

var synthVendors = [][2]string{
	{"Dell Inc.", "PowerEdge R650"}, {"HP", "ProDesk 600 G5"}, {"LENOVO", "ThinkCentre M720q"},
	{"Supermicro", "SYS-5019C-M"}, {"QEMU", "Standard PC (Q35 + ICH9, 2009)"},
}

var synthPackages = strings.Fields(`adduser apt base-files base-passwd bash bsdutils ca-certificates coreutils cron curl
dash debconf debianutils diffutils dmidecode dpkg e2fsprogs findutils gawk gcc-12-base gpgv grep gzip hostname
init-system-helpers iproute2 iptables iputils-ping kmod less locales login logrotate lsb-base mawk mount nano
ncurses-base netbase openssh-client openssh-server openssl passwd perl-base procps python3 python3-minimal rsync
rsyslog sed sensible-utils sudo systemd systemd-sysv sysvinit-utils tar tzdata udev util-linux vim-tiny wget
whiptail xz-utils zlib1g zstd nginx postgresql-15 redis-server docker-ce containerd.io git htop jq tmux unzip`)

var synthServices = strings.Fields(`accounts-daemon apparmor auditd chrony containerd cron dbus docker getty@tty1
irqbalance keyboard-setup kmod-static-nodes ModemManager multipathd networkd-dispatcher networking nginx
polkit postgresql redis-server rsyslog serial-getty@ttyS0 snapd ssh systemd-journal-flush systemd-journald
systemd-logind systemd-modules-load systemd-networkd systemd-random-seed systemd-remount-fs systemd-resolved
systemd-sysctl systemd-timesyncd systemd-tmpfiles-setup systemd-tmpfiles-setup-dev systemd-udev-trigger
systemd-udevd systemd-update-utmp systemd-user-sessions thermald udisks2 ufw unattended-upgrades upower
user-runtime-dir@0 user@0 fwupd packagekit cups avahi-daemon bluetooth NetworkManager wpa_supplicant`)

var synthDaemons = strings.Fields(`systemd-journald systemd-udevd systemd-networkd systemd-resolved systemd-timesyncd
systemd-logind dbus-daemon cron rsyslogd sshd agetty containerd dockerd nginx postgres redis-server chronyd polkitd`)

// synthLibraries are made-up library package names, made once, that give
// each simulated agent a few hundred software rows.
var synthLibraries = sync.OnceValue(func() []string {
	syll := strings.Fields("ab ac al an ar as at ba be bo ca ce co da de do el en er fa fi ga ge gi ka ke ko la le li lo ma me mo na ne no pa pe po ra re ro sa se so ta te to va ve xa ze")
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]string, 400)
	for i := range out {
		out[i] = fmt.Sprintf("lib%s%s%s%d", syll[r.IntN(len(syll))], syll[r.IntN(len(syll))], syll[r.IntN(len(syll))], r.IntN(9))
	}
	return out
})

// synthEpoch anchors simulated boot times; Synthetic reads no clock, so
// the same n always gives the same inventory.
var synthEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Synthetic returns a deterministic, realistic-looking inventory for
// simulated agent number n: a few hundred software rows, about fifty
// services, about a hundred processes and a few pending patches, varying
// with n. It reads no clock and costs well under a millisecond, so a
// simulator can run thousands of agents.
func Synthetic(n int) proto.Inventory {
	r := rand.New(rand.NewPCG(uint64(n), 0x9e3779b97f4a7c15))
	d := synthDistros[r.IntN(len(synthDistros))]
	ver := func() string { return fmt.Sprintf("%d.%d.%d-%d", r.IntN(10), r.IntN(30), r.IntN(20), 1+r.IntN(9)) }
	hostname := fmt.Sprintf("sim-%05d", n)

	vendor := synthVendors[r.IntN(len(synthVendors))]
	threads := 2 << r.IntN(5)
	diskSize := uint64(64<<r.IntN(6)) << 30
	used := diskSize / 1000 * uint64(105+10*r.IntN(80)) // n.5 % used
	hw := &proto.Hardware{
		CPUModel: synthCPUs[r.IntN(len(synthCPUs))], CPUCores: threads / 2, CPUThreads: threads,
		MemoryTotalBytes: uint64(4<<r.IntN(6)) << 30,
		Disks: []proto.Disk{{Name: "sda", Model: "Virtual Disk", SizeBytes: diskSize, Mountpoint: "/",
			FSType: "ext4", UsedBytes: used, FreeBytes: diskSize - used}},
		SystemVendor: vendor[0], SystemModel: vendor[1], BoardVendor: vendor[0],
		SerialNumber: fmt.Sprintf("SIM%07d", n), BIOSVendor: vendor[0], BIOSVersion: fmt.Sprintf("%d.%d.%d", 1+r.IntN(3), r.IntN(20), r.IntN(9)),
	}
	if r.IntN(5) == 0 {
		hw.Disks = append(hw.Disks, proto.Disk{Name: "sr0", Model: "DVD-ROM", Removable: true, CDROM: true})
	}

	inv := proto.Inventory{
		Hardware: hw,
		OS: &proto.OSInfo{Family: "linux", Name: d.name, ID: d.id, Version: d.version,
			KernelVersion: fmt.Sprintf(d.kernel, 10+r.IntN(200)), Arch: "x86_64", Hostname: hostname,
			MachineID: fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())},
		Network: []proto.NetIface{
			{Name: "eth0", MAC: fmt.Sprintf("52:54:00:%02x:%02x:%02x", n>>16&0xff, n>>8&0xff, n&0xff), MTU: 1500, Up: true,
				Addresses: []string{fmt.Sprintf("10.%d.%d.%d/16", 10+n>>16&0x3f, n>>8&0xff, n&0xff)}},
			{Name: "lo", MTU: 65536, Up: true, Loopback: true, Addresses: []string{"127.0.0.1/8", "::1/128"}},
		},
		Sessions: []proto.Session{},
		Uptime: &proto.Uptime{BootTime: synthEpoch.Add(-time.Duration(r.IntN(90*24)) * time.Hour),
			BootID: fmt.Sprintf("%08x-0000-4000-8000-%012x", n, r.Uint64()>>16)},
	}
	inv.Uptime.UptimeSeconds = int64(synthEpoch.Sub(inv.Uptime.BootTime).Seconds())
	for i := range r.IntN(3) {
		login := inv.Uptime.BootTime.Add(time.Duration(1+i) * time.Hour)
		inv.Sessions = append(inv.Sessions, proto.Session{Username: []string{"admin", "ops", "alice"}[i],
			TTY: fmt.Sprintf("pts/%d", i), Remote: fmt.Sprintf("10.0.0.%d", 2+i), Type: "ssh",
			LoginAt: &login, SessionID: fmt.Sprint(100 + i), Active: true})
	}

	for _, name := range synthPackages {
		inv.Software = append(inv.Software, proto.Software{Name: name, Version: ver(), Arch: "amd64", Source: d.software})
	}
	libs := synthLibraries()
	for i := 0; i < len(libs); i += 1 + r.IntN(2) {
		inv.Software = append(inv.Software, proto.Software{Name: libs[i], Version: ver(), Arch: "amd64", Source: d.software})
	}
	sortSoftware(inv.Software)

	inv.Patches = []proto.PatchEntry{}
	for range r.IntN(9) {
		s := inv.Software[r.IntN(len(inv.Software))]
		inv.Patches = append(inv.Patches, pendingPatch(d.patches, s.Name, s.Version, s.Version+"+u1"))
	}
	inv.Patches = sortPatches(inv.Patches)

	for _, name := range synthServices {
		if r.IntN(10) == 0 {
			continue
		}
		s := proto.Service{Name: name + ".service", LoadState: "loaded", StartMode: "enabled",
			ActiveState: "active", State: "running", SubState: "running"}
		switch r.IntN(12) {
		case 0:
			s.ActiveState, s.State, s.SubState = "failed", "failed", "failed"
		case 1, 2:
			s.ActiveState, s.State, s.SubState, s.StartMode = "inactive", "stopped", "dead", "disabled"
		}
		inv.Services = append(inv.Services, s)
	}

	pid := 1
	proc := func(name, user, cmd string) {
		inv.Processes = append(inv.Processes, proto.Process{PID: pid, PPID: min(pid-1, 1), Name: name, User: user,
			Command: cmd, CPUPercent: float64(r.IntN(30)) / 10, RSSBytes: uint64(r.IntN(200_000)) << 10,
			StartedAt: inv.Uptime.BootTime.Add(time.Duration(pid) * time.Second)})
		pid += 1 + r.IntN(40)
	}
	proc("systemd", "root", "/sbin/init")
	for i := range 60 + r.IntN(20) {
		proc(fmt.Sprintf("kworker/%d:%d", i%threads, i/threads), "root", "")
	}
	for _, name := range synthDaemons {
		proc(name, "root", "/usr/sbin/"+name)
	}
	for i := range 10 + r.IntN(15) {
		proc([]string{"bash", "sleep", "python3", "node"}[i%4], "admin", "")
	}
	return inv
}
