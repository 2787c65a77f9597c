//go:build windows

package shells

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// supported: Windows shells run behind pipes (no ConPTY yet): cmd.exe
// reads whole lines and echoes each once it runs it, and resize is
// ignored.
const supported = true

// pipeTerm is cmd.exe with its input and output on pipes, inside a job
// object so that ending it ends everything it started.
type pipeTerm struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	out       *os.File
	job       windows.Handle
	shell     string
	done      chan struct{}
	code      int
	closeOnce sync.Once
}

func startTerminal(cols, rows int) (terminal, error) {
	shell := os.Getenv("ComSpec")
	if shell == "" {
		root := os.Getenv("SystemRoot")
		if root == "" {
			root = `C:\Windows`
		}
		shell = filepath.Join(root, "System32", "cmd.exe")
	}
	cmd := exec.Command(shell)
	cmd.Dir = os.Getenv("USERPROFILE")
	if fi, err := os.Stat(cmd.Dir); err != nil || !fi.IsDir() {
		cmd.Dir = os.Getenv("SystemDrive") + `\`
	}
	// Windows programs need the system's variables (SystemRoot, ...), so
	// the environment is the agent's own.
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NO_WINDOW}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("shell input pipe: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("shell output pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	job, err := killOnCloseJob()
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		windows.CloseHandle(job)
		return nil, fmt.Errorf("start %s: %w", shell, err)
	}
	w.Close() // the shell holds the write end; EOF once it and its children are gone
	t := &pipeTerm{cmd: cmd, stdin: stdin, out: r, job: job, shell: shell, done: make(chan struct{})}
	if err := t.assign(); err != nil {
		_ = cmd.Process.Kill()
	}
	go t.wait()
	return t, nil
}

// killOnCloseJob makes a job object whose processes die when its last
// handle closes: on Close, or when the agent itself dies.
func killOnCloseJob() (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, fmt.Errorf("create job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, fmt.Errorf("configure job object: %w", err)
	}
	return job, nil
}

func (t *pipeTerm) assign() error {
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(t.cmd.Process.Pid))
	if err != nil {
		return fmt.Errorf("open the shell process: %w", err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(t.job, h); err != nil {
		return fmt.Errorf("put the shell in its job object: %w", err)
	}
	return nil
}

func (t *pipeTerm) wait() {
	_ = t.cmd.Wait()
	t.code = t.cmd.ProcessState.ExitCode()
	close(t.done)
}

func (t *pipeTerm) Read(p []byte) (int, error) { return t.out.Read(p) }

var lf = []byte{'\n'}

// Write turns a lone CR (what a terminal sends for Enter) into CR LF:
// cmd.exe on a pipe ends a line only at LF.
func (t *pipeTerm) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\r')
		if i < 0 || (i+1 < len(p) && p[i+1] == '\n') {
			end := len(p)
			if i >= 0 {
				end = i + 2
			}
			n, err := t.stdin.Write(p[:end])
			written += n
			if err != nil {
				return written, err
			}
			p = p[end:]
			continue
		}
		if _, err := t.stdin.Write(p[:i+1]); err != nil {
			return written, err
		}
		if _, err := t.stdin.Write(lf); err != nil {
			return written, err
		}
		written += i + 1
		p = p[i+1:]
	}
	return written, nil
}

func (t *pipeTerm) Resize(cols, rows int) error { return nil }
func (t *pipeTerm) Shell() string               { return t.shell }
func (t *pipeTerm) PID() int                    { return t.cmd.Process.Pid }
func (t *pipeTerm) Done() <-chan struct{}       { return t.done }
func (t *pipeTerm) ExitCode() int               { <-t.done; return t.code }

// Kill ends the whole job at once: Windows has no hangup signal that
// cmd.exe would honour, so grace does not apply.
func (t *pipeTerm) Kill(grace time.Duration) {
	select {
	case <-t.done:
		return
	default:
	}
	_ = windows.TerminateJobObject(t.job, 1)
	<-t.done
}

// Close ends whatever the shell left running (the job), which closes the
// last write end of the output pipe and so ends a pending Read.
func (t *pipeTerm) Close() error {
	t.closeOnce.Do(func() {
		_ = windows.TerminateJobObject(t.job, 1)
		_ = windows.CloseHandle(t.job)
		_ = t.stdin.Close()
		// Closing the read end completes once a pending Read returned.
		_ = t.out.Close()
	})
	return nil
}
