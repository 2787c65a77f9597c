//go:build linux

package shells

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// supported: Linux shells run in a PTY.
const supported = true

// ptyTerm is a login shell in a PTY, leading its own session.
type ptyTerm struct {
	cmd    *exec.Cmd
	master *os.File
	shell  string
	done   chan struct{}
	code   int
}

// startTerminal starts the login shell of the account the agent runs as
// (the privileged one), in its home directory, with a clean environment.
func startTerminal(cols, rows int) (terminal, error) {
	acct := terminalAccount()
	cmd := exec.Command(acct.shell)
	// A leading "-" in argv[0] is how login(1) asks a shell to be a login
	// shell (profile files read), across bash, dash, zsh and busybox.
	cmd.Args = []string{"-" + filepath.Base(acct.shell)}
	cmd.Dir = acct.home
	if fi, err := os.Stat(acct.home); err != nil || !fi.IsDir() {
		cmd.Dir = "/"
	}
	cmd.Env = []string{
		"TERM=xterm-256color", "HOME=" + acct.home, "USER=" + acct.name, "LOGNAME=" + acct.name,
		"SHELL=" + acct.shell, "PATH=" + basePath,
	}
	if lang, ok := os.LookupEnv("LANG"); ok {
		cmd.Env = append(cmd.Env, "LANG="+lang)
	}
	// StartWithSize makes the shell a session leader (Setsid) with the PTY
	// as its controlling terminal, so its jobs can be found and signalled
	// as one session.
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
	if err != nil {
		return nil, fmt.Errorf("start %s in a pty: %w", acct.shell, err)
	}
	t := &ptyTerm{cmd: cmd, shell: acct.shell, done: make(chan struct{})}
	go t.wait()
	t.master, err = pollable(ptmx)
	if err != nil {
		t.Kill(0)
		return nil, err
	}
	return t, nil
}

// terminalAccount is the account whose login shell a session runs:
// the agent's own. The package's tests replace it once, before any test
// runs, with the same account in a home directory they control, so a
// slow or blocking login profile of the machine's user cannot stall them.
var terminalAccount = currentAccount

func currentAccount() account {
	var a account
	f, err := os.Open("/etc/passwd")
	if err != nil {
		a = lookupAccount(strings.NewReader(""), os.Getuid())
	} else {
		defer f.Close()
		a = lookupAccount(f, os.Getuid())
	}
	return withShellOverride(a, os.Getenv(ShellEnv))
}

// pollable returns a non-blocking duplicate of the PTY master, so Close
// interrupts a pending Read. creack/pty's ioctls call Fd(), which puts its
// file in blocking mode for good; a Read blocked there would outlive the
// session whenever a background job kept the terminal open.
func pollable(f *os.File) (*os.File, error) {
	defer f.Close()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("duplicate the pty master: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("make the pty master non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

func (t *ptyTerm) wait() {
	_ = t.cmd.Wait()
	t.code = -1
	if ws, ok := t.cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		if ws.Signaled() {
			t.code = 128 + int(ws.Signal())
		} else {
			t.code = ws.ExitStatus()
		}
	}
	close(t.done)
}

func (t *ptyTerm) Read(p []byte) (int, error) {
	n, err := t.master.Read(p)
	// EIO is how a PTY master says every slave is closed: the end.
	if errors.Is(err, syscall.EIO) {
		err = os.ErrClosed
	}
	return n, err
}

func (t *ptyTerm) Write(p []byte) (int, error) { return t.master.Write(p) }
func (t *ptyTerm) Shell() string               { return t.shell }
func (t *ptyTerm) PID() int                    { return t.cmd.Process.Pid }
func (t *ptyTerm) Done() <-chan struct{}       { return t.done }
func (t *ptyTerm) ExitCode() int               { <-t.done; return t.code }
func (t *ptyTerm) Close() error                { return t.master.Close() }

// Resize sets the window size through the master without Fd(), which
// would make it blocking again; the kernel sends SIGWINCH to the
// foreground job.
func (t *ptyTerm) Resize(cols, rows int) error {
	sc, err := t.master.SyscallConn()
	if err != nil {
		return fmt.Errorf("resize: %w", err)
	}
	var ierr error
	if err := sc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)})
	}); err != nil {
		return fmt.Errorf("resize: %w", err)
	}
	if ierr != nil {
		return fmt.Errorf("resize: %w", ierr)
	}
	return nil
}

// Kill hangs up the shell's whole session (the shell and every job it
// started, in whatever process group), waits up to grace for the shell,
// then kills whatever is left of the session. A shell that already
// exited on its own is left alone with its background jobs, as after an
// ssh logout.
func (t *ptyTerm) Kill(grace time.Duration) {
	select {
	case <-t.done:
		return
	default:
	}
	sid := t.cmd.Process.Pid
	_ = t.cmd.Process.Signal(unix.SIGHUP)
	signalSession(sid, unix.SIGHUP)
	timer := time.NewTimer(grace)
	select {
	case <-t.done:
	case <-timer.C:
		_ = t.cmd.Process.Kill()
	}
	timer.Stop()
	signalSession(sid, unix.SIGKILL)
	<-t.done
}

// signalSession sends sig to every process in session sid, found in
// /proc (field 6 of stat, counted after the command name, which may hold
// spaces and parentheses).
func signalSession(sid int, sig unix.Signal) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	want := strconv.Itoa(sid)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		// After ")": state ppid pgrp session ...
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 3 && f[3] == want {
			_ = unix.Kill(pid, sig)
		}
	}
}
