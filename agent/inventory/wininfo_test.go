package inventory

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

func TestWindowsOS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		v    winVersion
		cv   winCurrentVersion
		want proto.OSInfo
	}{
		{"windows 11 keeps saying 10 in ProductName",
			winVersion{Major: 10, Build: 22631},
			winCurrentVersion{ProductName: "Windows 10 Pro", DisplayVersion: "23H2", CurrentBuild: "22631", UBR: 3007, HasUBR: true},
			proto.OSInfo{Name: "Windows 11 Pro 23H2", Version: "23H2", KernelVersion: "10.0.22631.3007"}},
		{"windows 10 with ReleaseId only",
			winVersion{Major: 10, Build: 18363},
			winCurrentVersion{ProductName: "Windows 10 Enterprise", ReleaseID: "1909", UBR: 1556, HasUBR: true},
			proto.OSInfo{Name: "Windows 10 Enterprise 1909", Version: "1909", KernelVersion: "10.0.18363.1556"}},
		{"server 2022 is not renamed",
			winVersion{Major: 10, Build: 20348},
			winCurrentVersion{ProductName: "Windows Server 2022 Datacenter", DisplayVersion: "21H2"},
			proto.OSInfo{Name: "Windows Server 2022 Datacenter 21H2", Version: "21H2", KernelVersion: "10.0.20348"}},
		{"wine: old product name, service pack, no UBR",
			winVersion{Major: 6, Minor: 1, Build: 7601, CSDVersion: "Service Pack 1"},
			winCurrentVersion{ProductName: "Microsoft Windows 7"},
			proto.OSInfo{Name: "Microsoft Windows 7", Version: "Service Pack 1", KernelVersion: "6.1.7601"}},
		{"nothing in the registry",
			winVersion{Major: 10, Build: 19045},
			winCurrentVersion{},
			proto.OSInfo{Name: "Windows 10.0", Version: "10.0", KernelVersion: "10.0.19045"}},
		{"build from the registry when RtlGetVersion has none",
			winVersion{Major: 10},
			winCurrentVersion{ProductName: "Windows 10 Home", CurrentBuild: "22000"},
			proto.OSInfo{Name: "Windows 11 Home", Version: "10.0", KernelVersion: "10.0.22000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := tc.want
			want.Family, want.ID, want.Arch, want.Hostname, want.MachineID = "windows", "windows", "x86_64", "pc1", "ab-cd"
			require.Equal(t, &want, windowsOS(tc.v, tc.cv, "pc1", "x86_64", " AB-CD "))
		})
	}
	require.Equal(t, "x86_64", windowsArch(9))
	require.Equal(t, "aarch64", windowsArch(12))
	require.Equal(t, "x86", windowsArch(0))
	require.Equal(t, "unknown(77)", windowsArch(77))
	require.Equal(t, "Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz", cpuModelName("       Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz  "))
}

func TestCountProcessors(t *testing.T) {
	t.Parallel()
	entry := func(mask uint64, rel uint32) []byte {
		b := make([]byte, slpiSize)
		binary.LittleEndian.PutUint64(b, mask)
		binary.LittleEndian.PutUint32(b[8:], rel)
		return b
	}
	var buf []byte
	buf = append(buf, entry(0b11, 0)...)     // core with two threads (SMT)
	buf = append(buf, entry(0b1100, 0)...)   // another
	buf = append(buf, entry(0b1111, 1)...)   // NUMA node: not a core
	buf = append(buf, entry(0b1111, 2)...)   // cache
	buf = append(buf, entry(0b110000, 0)...) // a third core
	buf = append(buf, 1, 2, 3)               // a truncated tail is ignored
	cores, threads := countProcessors(buf)
	require.Equal(t, 3, cores)
	require.Equal(t, 6, threads)
	cores, threads = countProcessors(nil)
	require.Zero(t, cores+threads)
}

func TestWindowsDisks(t *testing.T) {
	t.Parallel()
	got := windowsDisks([]winDrive{
		{Root: `D:\`, Type: driveCDROM},
		{Root: `C:\`, Type: driveFixed, FSType: "NTFS", Label: "System", Total: 100, Free: 40, HasMedium: true},
		{Root: `Z:\`, Type: driveRemote, FSType: "NTFS", Total: 1000, Free: 1, HasMedium: true},
		{Root: `E:\`, Type: driveRemovable, FSType: "FAT32", Total: 8, Free: 9, HasMedium: true},
		{Root: `F:\`, Type: 1}, // DRIVE_NO_ROOT_DIR
	})
	require.Equal(t, []proto.Disk{
		{Name: "C:", Model: "System", Mountpoint: `C:\`, FSType: "NTFS", SizeBytes: 100, UsedBytes: 60, FreeBytes: 40},
		{Name: "D:", Mountpoint: `D:\`, CDROM: true},
		{Name: "E:", Mountpoint: `E:\`, FSType: "FAT32", Removable: true, SizeBytes: 8, FreeBytes: 8},
	}, got, "network and rootless drives left out; free never exceeds size; an empty CD-ROM has no size")
	require.Equal(t, []proto.Disk{}, windowsDisks(nil))
	require.Equal(t, []string{`C:\`, `D:\`}, splitMultiSZ("C:\\\x00D:\\\x00\x00"))
}

func TestBiosValues(t *testing.T) {
	t.Parallel()
	var hw proto.Hardware
	biosValues(map[string]string{
		"SystemManufacturer": "LENOVO", "SystemProductName": "20L8S2N800", "BaseBoardManufacturer": "To Be Filled By O.E.M.",
		"BaseBoardProduct": " 20L8S2N800 ", "BIOSVendor": "LENOVO", "BIOSVersion": "N22ET80W (1.57 )", "BIOSReleaseDate": "08/23/2022",
	}, &hw)
	require.Equal(t, proto.Hardware{SystemVendor: "LENOVO", SystemModel: "20L8S2N800", BoardName: "20L8S2N800",
		BIOSVendor: "LENOVO", BIOSVersion: "N22ET80W (1.57 )", BIOSDate: "08/23/2022"}, hw)
}

func TestWindowsVirtualization(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ vendor, model, want string }{
		{"VMware, Inc.", "VMware7,1", "vmware"},
		{"QEMU", "Standard PC (Q35 + ICH9, 2009)", "kvm"},
		{"innotek GmbH", "VirtualBox", "vbox"},
		{"Xen", "HVM domU", "xen"},
		{"Microsoft Corporation", "Virtual Machine", "hyperv"},
		{"Amazon EC2", "t3.micro", "kvm"},
		{"Google", "Google Compute Engine", "kvm"},
		{"Microsoft Corporation", "Surface Laptop 5", ""},
		{"LENOVO", "20L8S2N800", ""},
		{"", "", ""},
	} {
		require.Equal(t, tc.want, windowsVirtualization(tc.vendor, tc.model), "%s / %s", tc.vendor, tc.model)
	}
}

func TestWindowsInterfaces(t *testing.T) {
	t.Parallel()
	_, v4, _ := net.ParseCIDR("192.168.1.20/24")
	v4.IP = net.ParseIP("192.168.1.20").To4()
	_, v6, _ := net.ParseCIDR("fe80::1/64")
	v6.IP = net.ParseIP("fe80::1")
	got := windowsInterfaces([]winAdapter{
		{Name: "Wi-Fi", MAC: []byte{0xaa, 0xbb, 0xcc, 0, 1, 2}, MTU: 1500, Up: true, IfType: 71, Prefixes: []net.IPNet{*v4, *v6}},
		{Name: "Loopback Pseudo-Interface 1", MTU: 0xffffffff, Up: true, IfType: 24},
	})
	require.Equal(t, []proto.NetIface{
		{Name: "Loopback Pseudo-Interface 1", Up: true, Loopback: true, Addresses: []string{}},
		{Name: "Wi-Fi", MAC: "aa:bb:cc:00:01:02", MTU: 1500, Up: true, Addresses: []string{"192.168.1.20/24", "fe80::1/64"}},
	}, got)
}

func TestWindowsServices(t *testing.T) {
	t.Parallel()
	got := windowsServices([]winService{
		{Name: "wuauserv", DisplayName: "Windows Update", State: svcStopped, StartType: 3, HasConfig: true, Description: " Enables updates. "},
		{Name: "BITS", DisplayName: "Background Intelligent Transfer Service", State: svcRunning, StartType: 2, Delayed: true, HasConfig: true},
		{Name: "Spooler", State: svcStartPending, StartType: 2, HasConfig: true},
		{Name: "Locked", State: svcPaused},
		{Name: "Odd", State: 42, StartType: 4, HasConfig: true},
	})
	require.Equal(t, []proto.Service{
		{Name: "BITS", DisplayName: "Background Intelligent Transfer Service", State: "running", SubState: "running", StartMode: "auto-delayed"},
		{Name: "Locked", State: "paused", SubState: "paused"},
		{Name: "Odd", State: "unknown", SubState: "state_42", StartMode: "disabled"},
		{Name: "Spooler", State: "starting", SubState: "start_pending", StartMode: "auto"},
		{Name: "wuauserv", DisplayName: "Windows Update", State: "stopped", SubState: "stopped", StartMode: "manual", Description: "Enables updates."},
	}, got, "sorted by name; a service whose config could not be read has no start mode")
	for st, want := range map[uint32]string{svcStopPending: "stopping", svcContinuePending: "starting", svcPausePending: "stopping"} {
		got, _ := windowsServiceState(st)
		require.Equal(t, want, got)
	}
	require.Equal(t, "boot", windowsStartMode(0, false))
	require.Equal(t, "system", windowsStartMode(1, false))
	require.Equal(t, "", windowsStartMode(9, false))
}

func TestWindowsSoftware(t *testing.T) {
	t.Parallel()
	day := time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC)
	got := windowsSoftware([]uninstallEntry{
		{DisplayName: "7-Zip 23.01 (x64)", DisplayVersion: "23.01", Publisher: "Igor Pavlov", InstallDate: "20240305", EstimatedSizeKiB: 5800, Arch: "x86_64"},
		{DisplayName: "Microsoft Visual C++ 2015-2022 Redistributable (x86)", DisplayVersion: "14.38.33130.0", Publisher: "Microsoft Corporation", WindowsInstaller: true, Arch: "x86", InstallDate: "2024-03-05"},
		{DisplayName: "Microsoft Visual C++ 2015-2022 Redistributable (x86)", DisplayVersion: "14.38.33130.0", Publisher: "Microsoft Corporation", WindowsInstaller: true, Arch: "x86"},
		{DisplayName: "", DisplayVersion: "1.0"},                                      // no name: not shown by Programs and Features
		{DisplayName: "Hidden runtime", SystemComponent: true},                        // system component
		{DisplayName: "Update for Office (KB123)", ParentKeyName: "Office16.PROPLUS"}, // update of another entry
		{DisplayName: "Security Update for X", ReleaseType: "Security Update"},
		{DisplayName: "Hotfix for Y", ReleaseType: "Hotfix"},
		{DisplayName: " Zoom ", DisplayVersion: "5.17", InstallDate: "03/05/2024"}, // per-user install, unparsable date
	})
	require.Equal(t, []proto.Software{
		{Name: "7-Zip 23.01 (x64)", Version: "23.01", Publisher: "Igor Pavlov", Arch: "x86_64", Source: "registry", InstalledAt: &day, SizeBytes: 5800 * 1024},
		{Name: "Microsoft Visual C++ 2015-2022 Redistributable (x86)", Version: "14.38.33130.0", Publisher: "Microsoft Corporation", Arch: "x86", Source: "msi", InstalledAt: &day},
		{Name: "Zoom", Version: "5.17", Source: "registry"},
	}, got, "duplicates collapse to the first; hidden, nameless, update and hotfix entries are left out")
	require.Equal(t, []proto.Software{}, windowsSoftware(nil))
	require.Nil(t, installDate("19000101"))
}

func TestWindowsSessions(t *testing.T) {
	t.Parallel()
	logon := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	in := []winSession{
		{ID: 0, Station: "Services", State: wtsDisconnected},
		{ID: 1, Station: "Console", State: wtsActive, User: "alice", Domain: "CORP", LogonAt: logon},
		{ID: 3, Station: "RDP-Tcp#7", State: wtsActive, User: "bob", Client: "10.0.0.9"},
		{ID: 4, Station: "", State: wtsDisconnected, User: "alice"},
		{ID: 65536, Station: "RDP-Tcp", State: 6}, // listener
	}
	require.Equal(t, []proto.Session{
		{Username: "alice", SessionID: "4", Type: "console"},
		{Username: "alice", TTY: "Console", SessionID: "1", Type: "console", Active: true, LoginAt: &logon},
		{Username: "bob", TTY: "RDP-Tcp#7", Remote: "10.0.0.9", SessionID: "3", Type: "rdp", Active: true},
	}, windowsSessions(in))
	require.Equal(t, []string{"alice", "bob"}, sessionUsers(in))
	require.Equal(t, []string{}, sessionUsers(nil))
	require.Equal(t, time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC), filetimeToTime(uint64(logon.Unix())*1e7+116444736000000000))
	require.True(t, filetimeToTime(0).IsZero())
}
