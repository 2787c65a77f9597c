package inventory

// OS-neutral conversion of what the Windows APIs and registry return into
// the inventory's proto types. The Windows parts (*_windows.go) only read
// raw values; everything that decides (names, states, filtering,
// deduplication, date formats) lives here so Linux runs its table tests.

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/bits"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// winVersion is what RtlGetVersion reports (it is not shimmed the way
// GetVersionEx is, so it tells the real version to any binary).
type winVersion struct {
	Major, Minor, Build uint32
	CSDVersion          string // service pack, empty on modern Windows
}

// winCurrentVersion is HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion.
type winCurrentVersion struct {
	ProductName    string // "Windows 10 Pro" (still on Windows 11, see windowsOS)
	DisplayVersion string // "23H2" (Windows 10 20H2 and later)
	ReleaseID      string // "1909" (older Windows 10)
	CurrentBuild   string // "22631"
	EditionID      string // "Professional"
	UBR            uint32 // update build revision, the number after the build
	HasUBR         bool
}

// windowsOS builds the OS row. Name is the product name as Settings shows
// it plus the feature update ("Windows 11 Pro 23H2"); KernelVersion is the
// full build number "10.0.22631.3007" that update catalogs use.
func windowsOS(v winVersion, cv winCurrentVersion, hostname, arch, machineGUID string) *proto.OSInfo {
	build := v.Build
	if build == 0 {
		if b, err := strconv.ParseUint(cv.CurrentBuild, 10, 32); err == nil {
			build = uint32(b)
		}
	}
	name := strings.TrimSpace(cv.ProductName)
	// Microsoft never changed ProductName for Windows 11: it says
	// "Windows 10 Pro" there. Build 22000 is the first Windows 11.
	if rest, ok := strings.CutPrefix(name, "Windows 10"); ok && build >= 22000 && !strings.Contains(name, "Server") {
		name = "Windows 11" + rest
	}
	if name == "" {
		name = fmt.Sprintf("Windows %d.%d", v.Major, v.Minor)
	}
	feature := cmp.Or(strings.TrimSpace(cv.DisplayVersion), strings.TrimSpace(cv.ReleaseID))
	if feature != "" && !strings.Contains(name, feature) {
		name += " " + feature
	}
	kernel := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, build)
	if cv.HasUBR {
		kernel += fmt.Sprintf(".%d", cv.UBR)
	}
	return &proto.OSInfo{
		Family:        "windows",
		Name:          name,
		ID:            "windows",
		Version:       cmp.Or(feature, strings.TrimSpace(v.CSDVersion), fmt.Sprintf("%d.%d", v.Major, v.Minor)),
		KernelVersion: kernel,
		Arch:          arch,
		Hostname:      hostname,
		MachineID:     strings.ToLower(strings.TrimSpace(machineGUID)),
	}
}

// windowsArch names a PROCESSOR_ARCHITECTURE_* value the way uname names
// machines, so Linux and Windows rows compare.
func windowsArch(a uint16) string {
	switch a {
	case 9:
		return "x86_64"
	case 12:
		return "aarch64"
	case 0:
		return "x86"
	case 5:
		return "arm"
	}
	return fmt.Sprintf("unknown(%d)", a)
}

// cpuModelName tidies the registry's ProcessorNameString, which Intel pads
// with runs of spaces.
func cpuModelName(s string) string { return strings.Join(strings.Fields(s), " ") }

// slpiSize is sizeof(SYSTEM_LOGICAL_PROCESSOR_INFORMATION) on 64-bit
// Windows: ULONG_PTR ProcessorMask, a 4-byte Relationship padded to 8, and
// a 16-byte union.
const slpiSize = 32

// countProcessors reads the buffer GetLogicalProcessorInformation fills (64-bit
// layout): physical cores are the RelationProcessorCore entries, logical
// processors the bits of their masks.
func countProcessors(buf []byte) (cores, threads int) {
	for off := 0; off+slpiSize <= len(buf); off += slpiSize {
		mask := binary.LittleEndian.Uint64(buf[off:])
		if binary.LittleEndian.Uint32(buf[off+8:]) == 0 { // RelationProcessorCore
			cores++
			threads += bits.OnesCount64(mask)
		}
	}
	return cores, threads
}

// GetDriveType answers.
const (
	driveRemovable = 2
	driveFixed     = 3
	driveRemote    = 4
	driveCDROM     = 5
	driveRAMDisk   = 6
)

// winDrive is one drive letter as the volume APIs describe it.
type winDrive struct {
	Root      string // "C:\"
	Type      uint32 // GetDriveType
	FSType    string // GetVolumeInformation's file system name; empty without media
	Label     string
	Total     uint64 // GetDiskFreeSpaceEx; zero when no media is inserted
	Free      uint64
	HasMedium bool // GetDiskFreeSpaceEx succeeded
}

// windowsDisks turns drive letters into disk rows. Network drives are left
// out (they are per-user mappings of another machine's disk, as Linux
// leaves out network mounts); an empty CD-ROM or card reader stays, with
// no size. Rows are sorted by name ("C:").
func windowsDisks(drives []winDrive) []proto.Disk {
	out := []proto.Disk{}
	for _, d := range drives {
		switch d.Type {
		case driveFixed, driveRemovable, driveCDROM, driveRAMDisk:
		default:
			continue
		}
		name := strings.TrimRight(d.Root, `\`)
		if name == "" {
			continue
		}
		row := proto.Disk{
			Name:       name,
			Model:      d.Label,
			Removable:  d.Type == driveRemovable,
			CDROM:      d.Type == driveCDROM,
			Mountpoint: d.Root,
			FSType:     d.FSType,
		}
		if d.HasMedium {
			row.SizeBytes, row.FreeBytes = d.Total, min(d.Free, d.Total)
			row.UsedBytes = row.SizeBytes - row.FreeBytes
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b proto.Disk) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// splitMultiSZ splits a double-NUL-terminated list of strings
// (GetLogicalDriveStrings, REG_MULTI_SZ) already converted to a Go string.
func splitMultiSZ(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, "\x00") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// biosValues fills the board, system and BIOS fields from
// HKLM\HARDWARE\DESCRIPTION\System\BIOS (Windows copies them there from
// SMBIOS at boot), dropping the same firmware placeholders as Linux.
func biosValues(v map[string]string, hw *proto.Hardware) {
	for name, dst := range map[string]*string{
		"BaseBoardManufacturer": &hw.BoardVendor,
		"BaseBoardProduct":      &hw.BoardName,
		"SystemManufacturer":    &hw.SystemVendor,
		"SystemProductName":     &hw.SystemModel,
		"BIOSVendor":            &hw.BIOSVendor,
		"BIOSVersion":           &hw.BIOSVersion,
		"BIOSReleaseDate":       &hw.BIOSDate,
	} {
		s := strings.TrimSpace(v[name])
		if !slices.Contains(dmiPlaceholders, strings.ToLower(s)) {
			*dst = s
		}
	}
}

// windowsVirtualization names the hypervisor a guest runs under from the
// SMBIOS system vendor and model, in the words gopsutil uses on Linux;
// empty on physical machines (and unknown hypervisors).
func windowsVirtualization(vendor, model string) string {
	v, m := strings.ToLower(vendor), strings.ToLower(model)
	switch {
	case strings.Contains(v, "vmware") || strings.HasPrefix(m, "vmware"):
		return "vmware"
	case strings.Contains(v, "qemu") || strings.Contains(m, "kvm") || strings.Contains(m, "standard pc (") || m == "openstack nova":
		return "kvm"
	case strings.Contains(v, "innotek") || strings.Contains(m, "virtualbox"):
		return "vbox"
	case strings.Contains(v, "xen") || strings.HasPrefix(m, "hvm domu"):
		return "xen"
	case strings.Contains(v, "microsoft") && strings.Contains(m, "virtual machine"):
		return "hyperv"
	case strings.Contains(v, "amazon ec2") || strings.HasPrefix(m, "amazon ec2"):
		return "kvm"
	case strings.Contains(v, "google") && strings.Contains(m, "google compute engine"):
		return "kvm"
	case strings.Contains(v, "parallels"):
		return "parallels"
	}
	return ""
}

// winAdapter is one adapter from GetAdaptersAddresses.
type winAdapter struct {
	Name     string // FriendlyName, "Ethernet" (what ipconfig shows)
	MAC      []byte
	MTU      uint32
	Up       bool   // OperStatus IfOperStatusUp
	IfType   uint32 // IF_TYPE_SOFTWARE_LOOPBACK is 24
	Prefixes []net.IPNet
}

// windowsInterfaces converts adapters to interface rows, sorted by name,
// addresses in CIDR form as Linux reports them.
func windowsInterfaces(as []winAdapter) []proto.NetIface {
	out := make([]proto.NetIface, 0, len(as))
	for _, a := range as {
		n := proto.NetIface{Name: a.Name, MTU: int(a.MTU), Up: a.Up, Loopback: a.IfType == 24, Addresses: []string{}}
		// MTU is 0xffffffff on adapters that have none (some tunnels).
		if a.MTU > 1<<20 {
			n.MTU = 0
		}
		if len(a.MAC) > 0 {
			n.MAC = net.HardwareAddr(a.MAC).String()
		}
		for _, p := range a.Prefixes {
			n.Addresses = append(n.Addresses, p.String())
		}
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b proto.NetIface) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// SCM service states (SERVICE_STATUS.dwCurrentState).
const (
	svcStopped         = 1
	svcStartPending    = 2
	svcStopPending     = 3
	svcRunning         = 4
	svcContinuePending = 5
	svcPausePending    = 6
	svcPaused          = 7
)

// windowsServiceState folds the SCM state into the cross-platform names
// watchdog rules compare (the same words the systemd states fold into),
// and keeps the SCM's own word as the sub-state.
func windowsServiceState(state uint32) (folded, sub string) {
	switch state {
	case svcStopped:
		return "stopped", "stopped"
	case svcStartPending:
		return "starting", "start_pending"
	case svcStopPending:
		return "stopping", "stop_pending"
	case svcRunning:
		return "running", "running"
	case svcContinuePending:
		return "starting", "continue_pending"
	case svcPausePending:
		return "stopping", "pause_pending"
	case svcPaused:
		return "paused", "paused"
	}
	return "unknown", fmt.Sprintf("state_%d", state)
}

// windowsStartMode names a QUERY_SERVICE_CONFIG start type as sc.exe
// does, in lower case; automatic services started late are
// "auto-delayed".
func windowsStartMode(startType uint32, delayed bool) string {
	switch startType {
	case 0:
		return "boot"
	case 1:
		return "system"
	case 2:
		if delayed {
			return "auto-delayed"
		}
		return "auto"
	case 3:
		return "manual"
	case 4:
		return "disabled"
	}
	return ""
}

// winService is one service from EnumServicesStatusEx plus its config.
type winService struct {
	Name, DisplayName, Description string
	State                          uint32
	StartType                      uint32
	Delayed                        bool
	HasConfig                      bool // QueryServiceConfig answered
}

// windowsServices converts SCM rows, sorted by name.
func windowsServices(in []winService) []proto.Service {
	out := make([]proto.Service, 0, len(in))
	for _, s := range in {
		state, sub := windowsServiceState(s.State)
		row := proto.Service{Name: s.Name, DisplayName: s.DisplayName, State: state, SubState: sub, Description: strings.TrimSpace(s.Description)}
		if s.HasConfig {
			row.StartMode = windowsStartMode(s.StartType, s.Delayed)
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b proto.Service) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// uninstallEntry is one subkey of an Uninstall key.
type uninstallEntry struct {
	DisplayName, DisplayVersion, Publisher, InstallDate string
	EstimatedSizeKiB                                    uint64
	SystemComponent                                     bool   // hidden from Programs and Features
	ParentKeyName                                       string // set on updates of another entry
	ReleaseType                                         string // "Update", "Hotfix", "Security Update" on patches
	WindowsInstaller                                    bool   // installed by MSI
	Arch                                                string // the registry view: x86_64 or x86
	DisplayIcon                                         string // the product's icon: a file, maybe ",<index>" (environment variables expanded)
}

// displayIcons reads each entry's DisplayIcon (once per value), by the
// software key of its display name; an icon that cannot be read is left
// out.
func displayIcons(entries []uninstallEntry, load func(string) (proto.SoftwareIcon, error)) map[string]proto.SoftwareIcon {
	out := map[string]proto.SoftwareIcon{}
	read := map[string]*proto.SoftwareIcon{}
	for _, e := range entries {
		key := strings.ToLower(strings.TrimSpace(e.DisplayName))
		if key == "" || e.DisplayIcon == "" {
			continue
		}
		if _, done := out[key]; done {
			continue
		}
		ic, seen := read[e.DisplayIcon]
		if !seen {
			if got, err := load(e.DisplayIcon); err == nil {
				ic = &got
			}
			read[e.DisplayIcon] = ic
		}
		if ic != nil {
			out[key] = *ic
		}
	}
	return out
}

// windowsSoftware lists what Programs and Features lists: entries with a
// display name that are not system components or updates of another
// entry. The same product seen twice (both registry views on a 32-bit
// system, or per-user and machine-wide) is one row. Sorted by name, arch,
// version.
func windowsSoftware(entries []uninstallEntry) []proto.Software {
	out := []proto.Software{}
	for _, e := range entries {
		name := strings.TrimSpace(e.DisplayName)
		rt := strings.ToLower(e.ReleaseType)
		if name == "" || e.SystemComponent || e.ParentKeyName != "" ||
			strings.Contains(rt, "update") || strings.Contains(rt, "hotfix") {
			continue
		}
		row := proto.Software{
			Name:        name,
			Version:     strings.TrimSpace(e.DisplayVersion),
			Publisher:   strings.TrimSpace(e.Publisher),
			Arch:        e.Arch,
			Source:      "registry",
			InstalledAt: installDate(e.InstallDate),
			SizeBytes:   e.EstimatedSizeKiB * 1024,
		}
		if e.WindowsInstaller {
			row.Source = "msi"
		}
		out = append(out, row)
	}
	key := func(a, b proto.Software) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Arch, b.Arch), cmp.Compare(a.Version, b.Version))
	}
	slices.SortStableFunc(out, key)
	return slices.CompactFunc(out, func(a, b proto.Software) bool { return key(a, b) == 0 })
}

// installDate reads InstallDate, which installers are meant to write as
// YYYYMMDD; some write other shapes, which are left out rather than
// guessed.
func installDate(s string) *time.Time {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"20060102", "2006-01-02", "2006/01/02"} {
		if t, err := time.Parse(layout, s); err == nil && t.Year() >= 1980 {
			return &t
		}
	}
	return nil
}

// WTS_CONNECTSTATE_CLASS values.
const (
	wtsActive       = 0
	wtsConnected    = 1
	wtsDisconnected = 4
)

// winSession is one session from WTSEnumerateSessions with its user.
type winSession struct {
	ID      uint32
	Station string // "Console", "RDP-Tcp#3", "Services"
	State   uint32
	User    string
	Domain  string
	Client  string // the RDP client's address, when known
	LogonAt time.Time
}

// windowsSessions keeps sessions with a user (session 0 and listeners
// have none), sorted by user, station, ID. Type is "console" or "rdp";
// disconnected sessions are listed but not active.
func windowsSessions(in []winSession) []proto.Session {
	out := []proto.Session{}
	for _, s := range in {
		if s.User == "" {
			continue
		}
		row := proto.Session{
			Username:  s.User,
			TTY:       s.Station,
			Remote:    s.Client,
			SessionID: strconv.FormatUint(uint64(s.ID), 10),
			Active:    s.State == wtsActive,
		}
		switch station := strings.ToLower(s.Station); {
		case strings.HasPrefix(station, "rdp"):
			row.Type = "rdp"
		case station == "console":
			row.Type = "console"
		case s.Client != "":
			row.Type = "rdp"
		default:
			row.Type = "console"
		}
		if !s.LogonAt.IsZero() {
			t := s.LogonAt.UTC()
			row.LoginAt = &t
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b proto.Session) int {
		return cmp.Or(cmp.Compare(a.Username, b.Username), cmp.Compare(a.TTY, b.TTY), cmp.Compare(a.SessionID, b.SessionID))
	})
	return out
}

// sessionUsers are the distinct user names of sessions, sorted, for the
// heartbeat's logged-in users.
func sessionUsers(in []winSession) []string {
	users := []string{}
	for _, s := range in {
		if s.User != "" && (s.State == wtsActive || s.State == wtsConnected || s.State == wtsDisconnected) && !slices.Contains(users, s.User) {
			users = append(users, s.User)
		}
	}
	slices.Sort(users)
	return users
}

// filetimeToTime converts a FILETIME (100 ns since 1601) to time; zero
// stays the zero time.
func filetimeToTime(ft uint64) time.Time {
	if ft == 0 {
		return time.Time{}
	}
	const epochDiff = 116444736000000000 // 1601-01-01 to 1970-01-01 in 100 ns
	return time.Unix(0, (int64(ft)-epochDiff)*100).UTC()
}
