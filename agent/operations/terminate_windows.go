package operations

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/cairn-rmm/cairn/agent/inventory"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// killWait bounds the wait after TerminateProcess, which only queues the
// termination: a process stuck in a driver call ends when that returns.
const killWait = 10 * time.Second

// Steps reported in ProcessTerminated.Signal.
const (
	stepClose     = "WM_CLOSE"
	stepTerminate = "TerminateProcess"
)

var (
	user32           = windows.NewLazySystemDLL("user32.dll")
	procPostMessageW = user32.NewProc("PostMessageW")
)

const wmClose = 0x0010

// terminate ends pid if it is still the process called name (compared
// without regard to case, as Windows names files): first it asks, by
// posting WM_CLOSE to the process's top-level windows, and waits up to
// grace; a process with no window on the agent's desktop (services,
// console programs, anything in another session) cannot be asked and is
// ended at once. Then TerminateProcess.
//
// The process handle is opened before the name is checked and kept to the
// end: Windows does not reuse a PID while a handle to the process is
// open, so the process checked is the process ended.
func terminate(ctx context.Context, pid int, name string, grace time.Duration) (proto.ProcessTerminated, error) {
	res := proto.ProcessTerminated{PID: pid, Name: name}
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE|windows.SYNCHRONIZE|windows.PROCESS_QUERY_INFORMATION, false, uint32(pid))
	switch {
	case errors.Is(err, windows.ERROR_INVALID_PARAMETER):
		return res, opError(proto.CodeOpNotFound, "no process with PID %d", pid)
	case errors.Is(err, windows.ERROR_ACCESS_DENIED):
		return res, opError(proto.CodeOpPermission, "not permitted to open PID %d for termination", pid)
	case err != nil:
		return res, opError(proto.CodeOpFailed, "opening PID %d: %v", pid, err)
	}
	defer windows.CloseHandle(h)
	current, err := processName(pid)
	if err != nil {
		return res, err
	}
	if !strings.EqualFold(current, name) {
		return res, opError(proto.CodeOpMismatch, "PID %d is %q, not %q", pid, current, name)
	}
	if criticalProcess(h) {
		// Windows' PID 1: ending a critical process (csrss.exe,
		// wininit.exe, services.exe, ...) stops the machine with a
		// bug check.
		return res, opError(proto.CodeOpInvalid, "PID %d (%s) is a critical system process; ending it would stop Windows", pid, current)
	}
	if exited(h, 0) {
		res.Terminated = true // ended on its own meanwhile
		return res, nil
	}
	if grace > 0 && closeWindows(uint32(pid)) > 0 {
		res.Signal = stepClose
		gone, err := waitExit(ctx, h, grace)
		if err != nil {
			return res, opError(proto.CodeOpTimedOut, "waiting for PID %d to exit: %v", pid, err)
		}
		if gone {
			res.Terminated = true
			return res, nil
		}
	}
	if err := windows.TerminateProcess(h, 1); err != nil {
		if exited(h, 0) {
			res.Terminated = true
			return res, nil
		}
		if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
			return res, opError(proto.CodeOpPermission, "not permitted to terminate PID %d: %v", pid, err)
		}
		return res, opError(proto.CodeOpFailed, "terminating PID %d: %v", pid, err)
	}
	res.Signal = stepTerminate
	gone, err := waitExit(ctx, h, killWait)
	if err != nil {
		return res, opError(proto.CodeOpTimedOut, "waiting for PID %d to exit: %v", pid, err)
	}
	if !gone {
		return res, opError(proto.CodeOpTimedOut, "PID %d (%s) was still running %s after TerminateProcess", pid, name, killWait)
	}
	res.Terminated = true
	return res, nil
}

// criticalProcess is critical; the tests replace it, because Wine can
// neither set nor report the flag.
var criticalProcess = critical

// critical reports whether the process is marked critical
// (ProcessBreakOnTermination): Windows bug-checks when one ends. A
// process whose flag cannot be read is not known to be critical.
func critical(h windows.Handle) bool {
	var flag uint32
	err := windows.NtQueryInformationProcess(h, windows.ProcessBreakOnTermination, unsafe.Pointer(&flag), uint32(unsafe.Sizeof(flag)), nil)
	return err == nil && flag != 0
}

// processName is the executable name the process collector reports for
// pid (Toolhelp's), not_found when the PID is not listed.
func processName(pid int) (string, error) {
	entries, err := inventory.ProcessEntries()
	if err != nil {
		return "", opError(proto.CodeOpFailed, "listing processes: %v", err)
	}
	for _, e := range entries {
		if int(e.ProcessID) == pid {
			return windows.UTF16ToString(e.ExeFile[:]), nil
		}
	}
	return "", opError(proto.CodeOpNotFound, "no process with PID %d", pid)
}

// exited reports whether the process ended within d.
func exited(h windows.Handle, d time.Duration) bool {
	ev, err := windows.WaitForSingleObject(h, uint32(d/time.Millisecond))
	return err == nil && ev == windows.WAIT_OBJECT_0
}

// waitExit waits up to d for the process to end, checking ctx between
// short waits. An error means ctx ended first.
func waitExit(ctx context.Context, h windows.Handle, d time.Duration) (bool, error) {
	deadline := time.Now().Add(d)
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return exited(h, 0), nil
		}
		if exited(h, min(left, 100*time.Millisecond)) {
			return true, nil
		}
	}
}

// enumWindows holds the one EnumWindows callback of the process
// (windows.NewCallback slots are limited and never freed) and what it
// collects; mu serializes the walks.
var enumWindows struct {
	mu    sync.Mutex
	once  sync.Once
	cb    uintptr
	pid   uint32
	found []windows.HWND
}

// closeWindows posts WM_CLOSE to pid's top-level windows on this desktop
// and returns how many it posted to.
func closeWindows(pid uint32) int {
	e := &enumWindows
	e.once.Do(func() {
		e.cb = windows.NewCallback(func(hwnd windows.HWND, _ uintptr) uintptr {
			var owner uint32
			if _, err := windows.GetWindowThreadProcessId(hwnd, &owner); err == nil && owner == e.pid {
				e.found = append(e.found, hwnd)
			}
			return 1 // continue
		})
	})
	e.mu.Lock()
	e.pid, e.found = pid, nil
	_ = windows.EnumWindows(e.cb, nil)
	found := e.found
	e.mu.Unlock()
	posted := 0
	for _, w := range found {
		if r, _, _ := procPostMessageW.Call(uintptr(w), wmClose, 0, 0); r != 0 {
			posted++
		}
	}
	return posted
}
