package inventory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/cairn-rmm/cairn/agent/proto"
)

var procK32GetProcessMemoryInfo = kernel32.NewProc("K32GetProcessMemoryInfo")

// processMemoryCounters is PROCESS_MEMORY_COUNTERS.
type processMemoryCounters struct {
	CB                         uint32
	PageFaultCount             uint32
	PeakWorkingSetSize         uintptr
	WorkingSetSize             uintptr
	QuotaPeakPagedPoolUsage    uintptr
	QuotaPagedPoolUsage        uintptr
	QuotaPeakNonPagedPoolUsage uintptr
	QuotaNonPagedPoolUsage     uintptr
	PagefileUsage              uintptr
	PeakPagefileUsage          uintptr
}

// ProcessEntries lists the processes of one Toolhelp snapshot as PID,
// parent PID and executable name. The name is what the process list
// reports and what terminate compares against.
func ProcessEntries() ([]windows.ProcessEntry32, error) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil, fmt.Errorf("CreateToolhelp32Snapshot: %w", err)
	}
	defer windows.CloseHandle(snap)
	var out []windows.ProcessEntry32
	e := windows.ProcessEntry32{Size: uint32(unsafe.Sizeof(windows.ProcessEntry32{}))}
	for err = windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		out = append(out, e)
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return nil, fmt.Errorf("Process32Next: %w", err)
	}
	return out, nil
}

// collectProcesses lists the processes from a Toolhelp snapshot, with the
// start time, CPU time, working set (as RSS), owner and command line of
// each one this account may open (PROCESS_QUERY_LIMITED_INFORMATION).
// Protected and system processes show what the snapshot knows (PID,
// parent, name). CPU percent is over the time since the previous
// collection, as on Linux.
func collectProcesses(ctx context.Context, c *Collector, inv *proto.Inventory) error {
	entries, err := ProcessEntries()
	if err != nil {
		return err
	}
	c.mu.Lock()
	prev := c.procs
	c.mu.Unlock()

	now := time.Now()
	next := procSamples{at: now, cpu: make(map[procKey]float64, len(entries))}
	users := map[string]string{}
	out := make([]proto.Process, 0, len(entries))
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		row := proto.Process{PID: int(e.ProcessID), PPID: int(e.ParentProcessID), Name: windows.UTF16ToString(e.ExeFile[:])}
		if e.ProcessID != 0 {
			processDetails(&row, users, prev, &next, now)
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

func processDetails(row *proto.Process, users map[string]string, prev procSamples, next *procSamples, now time.Time) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(row.PID))
	if err != nil {
		return
	}
	defer windows.CloseHandle(h)
	var created, exited, kernel, user windows.Filetime
	if windows.GetProcessTimes(h, &created, &exited, &kernel, &user) == nil {
		start := time.Unix(0, created.Nanoseconds()).UTC()
		row.StartedAt = start
		used := float64(ft100ns(kernel)+ft100ns(user)) / 1e7
		key := procKey{int32(row.PID), start.UnixMilli()}
		next.cpu[key] = used
		if before, ok := prev.cpu[key]; ok && now.After(prev.at) {
			row.CPUPercent = percent(used-before, now.Sub(prev.at))
		} else if now.After(start) {
			row.CPUPercent = percent(used, now.Sub(start))
		}
	}
	mc := processMemoryCounters{CB: uint32(unsafe.Sizeof(processMemoryCounters{}))}
	if r, _, _ := procK32GetProcessMemoryInfo.Call(uintptr(h), uintptr(unsafe.Pointer(&mc)), uintptr(mc.CB)); r != 0 {
		row.RSSBytes = uint64(mc.WorkingSetSize)
	}
	row.User = processOwner(h, users)
	row.Command = commandLine(h)
}

// ft100ns is a FILETIME duration in 100 ns units.
func ft100ns(ft windows.Filetime) uint64 { return uint64(ft.HighDateTime)<<32 | uint64(ft.LowDateTime) }

// processOwner is the account the process runs as, DOMAIN\user as Task
// Manager's details show it, resolved once per SID per collection.
func processOwner(h windows.Handle, cache map[string]string) string {
	var tok windows.Token
	if windows.OpenProcessToken(h, windows.TOKEN_QUERY, &tok) != nil {
		return ""
	}
	defer tok.Close()
	tu, err := tok.GetTokenUser()
	if err != nil {
		return ""
	}
	sid := tu.User.Sid.String()
	if n, ok := cache[sid]; ok {
		return n
	}
	n := sid
	if account, domain, _, err := tu.User.Sid.LookupAccount(""); err == nil {
		n = account
		if domain != "" {
			n = domain + `\` + account
		}
	}
	cache[sid] = n
	return n
}

// commandLine reads the process's command line (Windows 8.1 and later:
// ProcessCommandLineInformation), else its image path.
func commandLine(h windows.Handle) string {
	buf := make([]byte, 4096)
	for range 3 {
		var n uint32
		err := windows.NtQueryInformationProcess(h, windows.ProcessCommandLineInformation, unsafe.Pointer(&buf[0]), uint32(len(buf)), &n)
		if err == nil {
			return (*windows.NTUnicodeString)(unsafe.Pointer(&buf[0])).String()
		}
		if n <= uint32(len(buf)) {
			break
		}
		buf = make([]byte, n)
	}
	path := make([]uint16, windows.MAX_LONG_PATH)
	size := uint32(len(path))
	if windows.QueryFullProcessImageName(h, 0, &path[0], &size) == nil {
		return windows.UTF16ToString(path[:size])
	}
	return ""
}
