//go:build windows

package automation

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"

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
