//go:build windows

package automation

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf16"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/cairn-rmm/cairn/agent/proto"
)

const userContextSupported = true

// noConsoleSession is what WTSGetActiveConsoleSessionId answers while no
// session is attached to the console (a session switch in progress).
const noConsoleSession = 0xFFFFFFFF

// tokenSource returns a token of the user to launch as; the caller
// closes it.
type tokenSource func() (windows.Token, error)

// wtsSession launches into the active console session: the user signed
// in at the machine, the one a user-context job is meant for.
type wtsSession struct{ token tokenSource }

// NewUserSession is the Windows launcher of user-context jobs.
func NewUserSession() UserSession { return wtsSession{token: activeConsoleUserToken} }

func userContextRefusal() error { return nil }

func noSession(format string, args ...any) error {
	return &proto.Error{Code: proto.CodeNoActiveUserSession, Message: fmt.Sprintf(format, args...)}
}

// activeConsoleUserToken is the token of the user signed in to the
// console session. WTSQueryUserToken needs the SE_TCB privilege, which
// the agent has as LocalSystem.
func activeConsoleUserToken() (windows.Token, error) {
	id := windows.WTSGetActiveConsoleSessionId()
	if id == noConsoleSession {
		return 0, noSession("no session is attached to the console: nobody is signed in to run a user-context job")
	}
	var t windows.Token
	if err := windows.WTSQueryUserToken(id, &t); err != nil {
		if errors.Is(err, windows.ERROR_NO_TOKEN) {
			return 0, noSession("nobody is signed in to the console session (%d): a user-context job needs a signed-in user", id)
		}
		return 0, fmt.Errorf("WTSQueryUserToken(session %d): %w", id, err)
	}
	return t, nil
}

// Prepare makes cmd start as the user: a primary token of theirs
// (DuplicateTokenEx; os/exec then starts it with CreateProcessAsUser),
// their own environment (CreateEnvironmentBlock, without the agent's),
// and read access to dir (the script's directory, made by the agent as
// LocalSystem and not readable by users otherwise).
func (w wtsSession) Prepare(cmd *exec.Cmd, dir string, extra []string) (func(), error) {
	user, err := w.token()
	if err != nil {
		return nil, err
	}
	defer user.Close()
	var primary windows.Token
	if err := windows.DuplicateTokenEx(user, windows.MAXIMUM_ALLOWED, nil, windows.SecurityImpersonation, windows.TokenPrimary, &primary); err != nil {
		return nil, fmt.Errorf("DuplicateTokenEx: %w", err)
	}
	release := func() { _ = primary.Close() }
	env, err := primary.Environ(false)
	if err != nil {
		release()
		return nil, fmt.Errorf("CreateEnvironmentBlock: %w", err)
	}
	tu, err := primary.GetTokenUser()
	if err != nil {
		release()
		return nil, fmt.Errorf("the token's user: %w", err)
	}
	if err := grantRead(dir, tu.User.Sid); err != nil {
		release()
		return nil, fmt.Errorf("let the user read the script's directory: %w", err)
	}
	cmd.Env = append(env, extra...)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Token = syscall.Token(primary)
	cmd.SysProcAttr.HideWindow = true
	return release, nil
}

// grantRead adds an inheritable read-and-execute entry for sid to dir's
// DACL, keeping its other entries.
func grantRead(dir string, sid *windows.SID) error {
	sd, err := windows.GetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return err
	}
	acl, err := windows.ACLFromEntries([]windows.EXPLICIT_ACCESS{{
		AccessPermissions: windows.GENERIC_READ | windows.GENERIC_EXECUTE,
		AccessMode:        windows.GRANT_ACCESS,
		Inheritance:       windows.SUB_CONTAINERS_AND_OBJECTS_INHERIT,
		Trustee: windows.TRUSTEE{TrusteeForm: windows.TRUSTEE_IS_SID, TrusteeType: windows.TRUSTEE_IS_USER,
			TrusteeValue: windows.TrusteeValueFromSID(sid)},
	}}, dacl)
	if err != nil {
		return err
	}
	return windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION, nil, nil, acl, nil)
}

// interactiveDesktop is the user's desktop. A process started from the
// service's session without it (lpDesktop NULL, all os/exec can do:
// golang/go#42836) inherits the service's window station, which the
// user's token may not open, and console programs then fail to start.
const interactiveDesktop = `winsta0\default`

// userProcess is a script started in the user's session.
type userProcess struct {
	h      windows.Handle
	pid    int
	copies sync.WaitGroup
	pipes  []*os.File
}

// startUser starts cmd (Path, Args, Dir, Env, Stdout, Stderr, and the
// token Prepare set) with CreateProcessAsUser on the interactive desktop,
// its output through pipes copied to cmd's writers and no input.
func startUser(cmd *exec.Cmd) (process, error) {
	if cmd.SysProcAttr == nil || cmd.SysProcAttr.Token == 0 {
		return nil, errors.New("no user token: Prepare was not called")
	}
	args, err := windows.UTF16PtrFromString(windows.ComposeCommandLine(cmd.Args))
	if err != nil {
		return nil, err
	}
	app, err := windows.UTF16PtrFromString(cmd.Path)
	if err != nil {
		return nil, err
	}
	dir, err := windows.UTF16PtrFromString(cmd.Dir)
	if err != nil {
		return nil, err
	}
	desktop, _ := windows.UTF16PtrFromString(interactiveDesktop)
	env, err := envBlock(cmd.Env)
	if err != nil {
		return nil, err
	}
	// Only the pipes' write ends and NUL are inheritable, and only while
	// the process starts: ForkLock keeps os/exec from starting another
	// process (which would inherit them) meanwhile, as it does itself.
	sa := &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), InheritHandle: 1}
	syscall.ForkLock.Lock()
	var outR, outW, errR, errW windows.Handle
	closeAll := func(hs ...windows.Handle) {
		for _, h := range hs {
			if h != 0 {
				_ = windows.CloseHandle(h)
			}
		}
	}
	if err := windows.CreatePipe(&outR, &outW, sa, 0); err != nil {
		syscall.ForkLock.Unlock()
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	if err := windows.CreatePipe(&errR, &errW, sa, 0); err != nil {
		syscall.ForkLock.Unlock()
		closeAll(outR, outW)
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	_ = windows.SetHandleInformation(outR, windows.HANDLE_FLAG_INHERIT, 0)
	_ = windows.SetHandleInformation(errR, windows.HANDLE_FLAG_INHERIT, 0)
	nul, err := windows.CreateFile(windows.StringToUTF16Ptr("NUL"), windows.GENERIC_READ,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, sa, windows.OPEN_EXISTING, 0, 0)
	if err != nil {
		syscall.ForkLock.Unlock()
		closeAll(outR, outW, errR, errW)
		return nil, fmt.Errorf("open NUL: %w", err)
	}
	si := windows.StartupInfo{Desktop: desktop, Flags: windows.STARTF_USESTDHANDLES | windows.STARTF_USESHOWWINDOW,
		ShowWindow: windows.SW_HIDE, StdInput: nul, StdOutput: outW, StdErr: errW}
	si.Cb = uint32(unsafe.Sizeof(si))
	var pi windows.ProcessInformation
	err = windows.CreateProcessAsUser(windows.Token(cmd.SysProcAttr.Token), app, args, nil, nil, true,
		windows.CREATE_UNICODE_ENVIRONMENT|windows.CREATE_NO_WINDOW, &env[0], dir, &si, &pi)
	closeAll(outW, errW, nul)
	syscall.ForkLock.Unlock()
	if err != nil {
		closeAll(outR, errR)
		return nil, fmt.Errorf("CreateProcessAsUser: %w", err)
	}
	_ = windows.CloseHandle(pi.Thread)
	p := &userProcess{h: pi.Process, pid: int(pi.ProcessId)}
	for _, c := range []struct {
		h windows.Handle
		w io.Writer
	}{{outR, cmd.Stdout}, {errR, cmd.Stderr}} {
		f := os.NewFile(uintptr(c.h), "pipe")
		p.pipes = append(p.pipes, f)
		p.copies.Add(1)
		go func() { defer p.copies.Done(); _, _ = io.Copy(c.w, f) }()
	}
	return p, nil
}

// wait returns the exit code once the process ended and its output was
// read; a child still holding the pipes gets killGrace, then they close.
func (p *userProcess) wait() (int, error) {
	defer windows.CloseHandle(p.h)
	if _, err := windows.WaitForSingleObject(p.h, windows.INFINITE); err != nil {
		return -1, err
	}
	var code uint32
	if err := windows.GetExitCodeProcess(p.h, &code); err != nil {
		return -1, err
	}
	copied := make(chan struct{})
	go func() { p.copies.Wait(); close(copied) }()
	select {
	case <-copied:
	case <-time.After(killGrace):
	}
	for _, f := range p.pipes {
		_ = f.Close()
	}
	<-copied
	return int(code), nil
}

// kill ends the process tree (taskkill /T) and the process itself.
func (p *userProcess) kill() {
	_ = exec.Command("taskkill", "/F", "/T", "/PID", strconv.Itoa(p.pid)).Run()
	_ = windows.TerminateProcess(p.h, 1)
}

// envBlock is env as CreateProcess takes it: NUL-separated UTF-16
// "name=value" strings, ending with an empty one.
func envBlock(env []string) ([]uint16, error) {
	var b []uint16
	for _, kv := range env {
		if strings.ContainsRune(kv, 0) {
			return nil, fmt.Errorf("environment entry %q holds a NUL", kv)
		}
		b = append(b, utf16.Encode([]rune(kv))...)
		b = append(b, 0)
	}
	if len(b) == 0 {
		b = append(b, 0)
	}
	return append(b, 0), nil
}
