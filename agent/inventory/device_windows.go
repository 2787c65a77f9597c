package inventory

// Windows device_audit parts: OS, hardware, network and uptime, read
// through Win32 calls and the registry (no WMI: it is slow, can hang, and
// Wine implements little of it). wininfo.go turns the raw values into rows.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"

	"github.com/cairn-rmm/cairn/agent/proto"
)

var (
	kernel32                           = windows.NewLazySystemDLL("kernel32.dll")
	procGlobalMemoryStatusEx           = kernel32.NewProc("GlobalMemoryStatusEx")
	procGetNativeSystemInfo            = kernel32.NewProc("GetNativeSystemInfo")
	procGetLogicalProcessorInformation = kernel32.NewProc("GetLogicalProcessorInformation")
	procGetTickCount64                 = kernel32.NewProc("GetTickCount64")
)

// memoryStatusEx is MEMORYSTATUSEX.
type memoryStatusEx struct {
	Length               uint32
	MemoryLoad           uint32
	TotalPhys            uint64
	AvailPhys            uint64
	TotalPageFile        uint64
	AvailPageFile        uint64
	TotalVirtual         uint64
	AvailVirtual         uint64
	AvailExtendedVirtual uint64
}

// systemInfo is SYSTEM_INFO.
type systemInfo struct {
	ProcessorArchitecture     uint16
	Reserved                  uint16
	PageSize                  uint32
	MinimumApplicationAddress uintptr
	MaximumApplicationAddress uintptr
	ActiveProcessorMask       uintptr
	NumberOfProcessors        uint32
	ProcessorType             uint32
	AllocationGranularity     uint32
	ProcessorLevel            uint16
	ProcessorRevision         uint16
}

func globalMemory() (memoryStatusEx, error) {
	m := memoryStatusEx{}
	m.Length = uint32(unsafe.Sizeof(m))
	if r, _, err := procGlobalMemoryStatusEx.Call(uintptr(unsafe.Pointer(&m))); r == 0 {
		return m, fmt.Errorf("GlobalMemoryStatusEx: %w", err)
	}
	return m, nil
}

func nativeSystemInfo() systemInfo {
	var si systemInfo
	_, _, _ = procGetNativeSystemInfo.Call(uintptr(unsafe.Pointer(&si)))
	return si
}

// tickCount is the time since boot (GetTickCount64, milliseconds; it
// keeps counting through sleep).
func tickCount() time.Duration {
	r, _, _ := procGetTickCount64.Call()
	return time.Duration(r) * time.Millisecond
}

// regStrings reads the named string (or DWORD, as decimal) values of a key
// under HKLM in the 64-bit view; missing values are left out.
func regStrings(path string, names ...string) (map[string]string, error) {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, path, registry.QUERY_VALUE|registry.WOW64_64KEY)
	if err != nil {
		return nil, err
	}
	defer k.Close()
	out := map[string]string{}
	for _, n := range names {
		if s, _, err := k.GetStringValue(n); err == nil {
			out[n] = s
		} else if v, _, err := k.GetIntegerValue(n); err == nil {
			out[n] = fmt.Sprint(v)
		}
	}
	return out, nil
}

func collectOS(_ context.Context, _ *Collector, inv *proto.Inventory) error {
	rv := windows.RtlGetVersion()
	v := winVersion{Major: rv.MajorVersion, Minor: rv.MinorVersion, Build: rv.BuildNumber,
		CSDVersion: windows.UTF16ToString(rv.CsdVersion[:])}
	var cv winCurrentVersion
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, `SOFTWARE\Microsoft\Windows NT\CurrentVersion`, registry.QUERY_VALUE|registry.WOW64_64KEY)
	if err != nil {
		return fmt.Errorf(`open HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion: %w`, err)
	}
	defer k.Close()
	cv.ProductName, _, _ = k.GetStringValue("ProductName")
	cv.DisplayVersion, _, _ = k.GetStringValue("DisplayVersion")
	cv.ReleaseID, _, _ = k.GetStringValue("ReleaseId")
	cv.CurrentBuild, _, _ = k.GetStringValue("CurrentBuild")
	cv.EditionID, _, _ = k.GetStringValue("EditionID")
	if ubr, _, err := k.GetIntegerValue("UBR"); err == nil {
		cv.UBR, cv.HasUBR = uint32(ubr), true
	}
	hostname, err := os.Hostname()
	if err != nil {
		return err
	}
	var guid string
	if m, err := regStrings(`SOFTWARE\Microsoft\Cryptography`, "MachineGuid"); err == nil {
		guid = m["MachineGuid"]
	}
	inv.OS = windowsOS(v, cv, hostname, windowsArch(nativeSystemInfo().ProcessorArchitecture), guid)
	return nil
}

func collectHardware(ctx context.Context, _ *Collector, inv *proto.Inventory) error {
	hw := &proto.Hardware{}
	if m, err := regStrings(`HARDWARE\DESCRIPTION\System\CentralProcessor\0`, "ProcessorNameString"); err == nil {
		hw.CPUModel = cpuModelName(m["ProcessorNameString"])
	}
	hw.CPUCores, hw.CPUThreads = logicalProcessors()
	if hw.CPUThreads == 0 {
		hw.CPUThreads = int(nativeSystemInfo().NumberOfProcessors)
	}
	mem, err := settledMemory(ctx, func() (memoryStatusEx, uint64, error) {
		m, err := globalMemory()
		return m, m.TotalPhys, err
	})
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	hw.MemoryTotalBytes = mem.TotalPhys
	drives, err := logicalDrives(ctx)
	if err != nil {
		return fmt.Errorf("disks: %w", err)
	}
	hw.Disks = windowsDisks(drives)
	if m, err := regStrings(`HARDWARE\DESCRIPTION\System\BIOS`, "BaseBoardManufacturer", "BaseBoardProduct",
		"SystemManufacturer", "SystemProductName", "BIOSVendor", "BIOSVersion", "BIOSReleaseDate"); err == nil {
		biosValues(m, hw)
		hw.Virtualization = windowsVirtualization(m["SystemManufacturer"], m["SystemProductName"])
	}
	inv.Hardware = hw
	return nil
}

// logicalProcessors counts physical cores and logical processors; zero
// when the call is unavailable (the caller falls back to GetSystemInfo).
func logicalProcessors() (cores, threads int) {
	var n uint32
	_, _, _ = procGetLogicalProcessorInformation.Call(0, uintptr(unsafe.Pointer(&n)))
	if n == 0 {
		return 0, 0
	}
	buf := make([]byte, n)
	if r, _, _ := procGetLogicalProcessorInformation.Call(uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n))); r == 0 {
		return 0, 0
	}
	return countProcessors(buf[:n])
}

// logicalDrives reads every drive letter. GetDiskFreeSpaceEx fails on a
// drive without media (an empty CD-ROM), which is reported as such.
func logicalDrives(ctx context.Context) ([]winDrive, error) {
	buf := make([]uint16, 512)
	n, err := windows.GetLogicalDriveStrings(uint32(len(buf)), &buf[0])
	if err != nil {
		return nil, fmt.Errorf("GetLogicalDriveStrings: %w", err)
	}
	if int(n) > len(buf) {
		return nil, errors.New("GetLogicalDriveStrings: too many drives")
	}
	var out []winDrive
	for _, root := range splitMultiSZ(string(utf16Chars(buf[:n]))) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, err := windows.UTF16PtrFromString(root)
		if err != nil {
			continue
		}
		d := winDrive{Root: root, Type: windows.GetDriveType(p)}
		if d.Type == driveRemote {
			// Never touch a network drive: a dead server stalls the call.
			out = append(out, d)
			continue
		}
		var avail, total, free uint64
		if windows.GetDiskFreeSpaceEx(p, &avail, &total, &free) == nil {
			d.Total, d.Free, d.HasMedium = total, free, true
		}
		label, fs := make([]uint16, windows.MAX_PATH+1), make([]uint16, windows.MAX_PATH+1)
		if windows.GetVolumeInformation(p, &label[0], uint32(len(label)), nil, nil, nil, &fs[0], uint32(len(fs))) == nil {
			d.Label, d.FSType = windows.UTF16ToString(label), windows.UTF16ToString(fs)
		}
		out = append(out, d)
	}
	return out, nil
}

// utf16Chars converts UTF-16 with embedded NULs (a multi-string) to runes
// without stopping at the first NUL, as windows.UTF16ToString would.
func utf16Chars(s []uint16) []rune {
	r := make([]rune, len(s))
	for i, c := range s {
		r[i] = rune(c) // drive roots are ASCII
	}
	return r
}

func collectNetwork(_ context.Context, _ *Collector, inv *proto.Inventory) error {
	var size uint32 = 16 << 10
	var buf []byte
	for range 4 {
		buf = make([]byte, size)
		err := windows.GetAdaptersAddresses(windows.AF_UNSPEC, windows.GAA_FLAG_SKIP_ANYCAST|windows.GAA_FLAG_SKIP_MULTICAST|windows.GAA_FLAG_SKIP_DNS_SERVER,
			0, (*windows.IpAdapterAddresses)(unsafe.Pointer(&buf[0])), &size)
		if err == nil {
			break
		}
		if !errors.Is(err, windows.ERROR_BUFFER_OVERFLOW) {
			return fmt.Errorf("GetAdaptersAddresses: %w", err)
		}
		buf = nil
	}
	if buf == nil {
		return errors.New("GetAdaptersAddresses: the adapter list kept growing")
	}
	var as []winAdapter
	for a := (*windows.IpAdapterAddresses)(unsafe.Pointer(&buf[0])); a != nil; a = a.Next {
		w := winAdapter{Name: windows.UTF16PtrToString(a.FriendlyName), MTU: a.Mtu, IfType: a.IfType,
			Up: a.OperStatus == windows.IfOperStatusUp}
		if w.Name == "" {
			w.Name = windows.BytePtrToString(a.AdapterName)
		}
		if a.PhysicalAddressLength > 0 {
			w.MAC = append([]byte(nil), a.PhysicalAddress[:min(int(a.PhysicalAddressLength), len(a.PhysicalAddress))]...)
		}
		for u := a.FirstUnicastAddress; u != nil; u = u.Next {
			ip := u.Address.IP()
			if ip == nil {
				continue
			}
			bits := 128
			if ip4 := ip.To4(); ip4 != nil {
				ip, bits = ip4, 32
			}
			w.Prefixes = append(w.Prefixes, net.IPNet{IP: ip, Mask: net.CIDRMask(int(u.OnLinkPrefixLength), bits)})
		}
		as = append(as, w)
	}
	inv.Network = windowsInterfaces(as)
	return nil
}

func collectUptime(_ context.Context, _ *Collector, inv *proto.Inventory) error {
	up := tickCount()
	if up <= 0 {
		return errors.New("GetTickCount64 returned 0")
	}
	inv.Uptime = &proto.Uptime{
		BootTime:      stableBootTime(time.Now().Add(-up)),
		UptimeSeconds: int64(up / time.Second),
		BootID:        bootID(),
	}
	return nil
}

// bootTimes remembers the boot time computed first: now minus the tick
// count moves by a few milliseconds between calls, and a boot time that
// changed by a second would change the inventory hash with nothing
// happening.
var bootTimes struct {
	sync.Mutex
	last time.Time
}

func stableBootTime(t time.Time) time.Time {
	bootTimes.Lock()
	defer bootTimes.Unlock()
	if d := t.Sub(bootTimes.last); bootTimes.last.IsZero() || d > 5*time.Second || d < -5*time.Second {
		bootTimes.last = t.UTC().Truncate(time.Second)
	}
	return bootTimes.last
}

// bootID is Windows' boot counter (Windows 8 and later), which changes on
// every boot as Linux's boot_id does; "" where it is missing (Wine).
func bootID() string {
	m, err := regStrings(`SYSTEM\CurrentControlSet\Control\Session Manager\Memory Management\PrefetchParameters`, "BootId")
	if err != nil {
		return ""
	}
	return m["BootId"]
}
