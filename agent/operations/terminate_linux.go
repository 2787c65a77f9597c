package operations

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/shirou/gopsutil/v4/process"
	"golang.org/x/sys/unix"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// killWait bounds the wait after SIGKILL. A process that outlives it is
// stuck in the kernel (uninterruptible I/O), which no signal fixes.
const killWait = 10 * time.Second

// pollEvery is how often an exit is looked for when the wait cannot block
// on a pidfd, and how often a blocking wait checks ctx.
const pollEvery = 50 * time.Millisecond

// terminate sends SIGTERM to pid if it is still the process called name,
// waits up to grace for it to exit, then sends SIGKILL. A zombie counts as
// gone: it has exited and only waits for its parent to reap it.
//
// The process is held through a pidfd from before the name check to the
// last signal, so a PID reused in between is never signalled: the pidfd
// keeps naming the process that was checked (kernels before 5.3 have no
// pidfd and fall back to kill(2) by PID).
func terminate(ctx context.Context, pid int, name string, grace time.Duration) (proto.ProcessTerminated, error) {
	res := proto.ProcessTerminated{PID: pid, Name: name}
	t, err := openTarget(pid)
	if err != nil {
		return res, err
	}
	defer t.close()
	current, err := processName(ctx, pid)
	if err != nil {
		return res, err
	}
	if current != name {
		return res, opError(proto.CodeOpMismatch, "PID %d is %q, not %q", pid, current, name)
	}
	for _, step := range []struct {
		sig  unix.Signal
		name string
		wait time.Duration
	}{{unix.SIGTERM, "SIGTERM", grace}, {unix.SIGKILL, "SIGKILL", killWait}} {
		if err := t.signal(step.sig); errors.Is(err, unix.ESRCH) {
			res.Terminated = true // exited on its own meanwhile
			return res, nil
		} else if err != nil {
			return res, signalError(pid, step.name, err)
		}
		res.Signal = step.name
		gone, err := t.wait(ctx, step.wait)
		if err != nil {
			return res, opError(proto.CodeOpTimedOut, "waiting for PID %d to exit: %v", pid, err)
		}
		if gone {
			res.Terminated = true
			return res, nil
		}
	}
	return res, opError(proto.CodeOpTimedOut, "PID %d (%s) survived SIGKILL for %s; it is probably stuck in the kernel", pid, name, killWait)
}

// processName is the name the process collector reports (gopsutil's,
// which completes the kernel's 15-character comm from the command line).
func processName(ctx context.Context, pid int) (string, error) {
	p, err := process.NewProcessWithContext(ctx, int32(pid))
	if err != nil {
		return "", opError(proto.CodeOpNotFound, "no process with PID %d", pid)
	}
	name, err := p.NameWithContext(ctx)
	if err != nil {
		if _, serr := os.Stat("/proc/" + strconv.Itoa(pid)); os.IsNotExist(serr) {
			return "", opError(proto.CodeOpNotFound, "no process with PID %d", pid)
		}
		return "", opError(proto.CodeOpFailed, "reading the name of PID %d: %v", pid, err)
	}
	return name, nil
}

func signalError(pid int, sig string, err error) error {
	if errors.Is(err, unix.EPERM) {
		return opError(proto.CodeOpPermission, "not permitted to send %s to PID %d", sig, pid)
	}
	return opError(proto.CodeOpFailed, "sending %s to PID %d: %v", sig, pid, err)
}

// target is the process being terminated: a pidfd, or (fd < 0) its PID.
type target struct {
	pid int
	fd  int
}

func openTarget(pid int) (*target, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case err == nil:
		return &target{pid: pid, fd: fd}, nil
	case errors.Is(err, unix.ESRCH):
		return nil, opError(proto.CodeOpNotFound, "no process with PID %d", pid)
	case errors.Is(err, unix.ENOSYS):
		return &target{pid: pid, fd: -1}, nil
	default:
		return nil, opError(proto.CodeOpFailed, "opening PID %d: %v", pid, err)
	}
}

func (t *target) close() {
	if t.fd >= 0 {
		unix.Close(t.fd)
	}
}

func (t *target) signal(sig unix.Signal) error {
	if t.fd >= 0 {
		return unix.PidfdSendSignal(t.fd, sig, nil, 0)
	}
	return unix.Kill(t.pid, sig)
}

// wait reports whether the process exited within d. An error means ctx
// ended first.
func (t *target) wait(ctx context.Context, d time.Duration) (bool, error) {
	deadline := time.Now().Add(d)
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return t.exited(0), nil
		}
		if t.exited(min(left, pollEvery)) {
			return true, nil
		}
	}
}

// exited waits up to d for the process to exit. A pidfd turns readable
// when the process exits, reaped or not; without one, /proc is read after
// the wait.
func (t *target) exited(d time.Duration) bool {
	if t.fd >= 0 {
		fds := []unix.PollFd{{Fd: int32(t.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(d.Milliseconds()))
		return err == nil && n > 0
	}
	time.Sleep(d)
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", t.pid))
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain ") ".
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X'
}
