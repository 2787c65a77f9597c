package automation

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/testdir"
)

// These run as a Windows binary under Wine (scripts/wine/run-tests.sh
// ./agent/automation). Wine has one logon session, attached to the
// console (session 1), whose WTSQueryUserToken is the test's own user:
// the launcher runs its whole path there (WTSGetActiveConsoleSessionId,
// WTSQueryUserToken, DuplicateTokenEx, CreateEnvironmentBlock, the
// directory's DACL, CreateProcessAsUser), but the process it starts is
// not in another user's session. docs/agent.md "User-context jobs" lists
// what only real Windows shows.

// processToken is this process's token (the DACL test's user).
func processToken() (windows.Token, error) {
	var t windows.Token
	err := windows.OpenProcessToken(windows.CurrentProcess(),
		windows.TOKEN_DUPLICATE|windows.TOKEN_QUERY|windows.TOKEN_ASSIGN_PRIMARY|windows.TOKEN_ADJUST_DEFAULT|windows.TOKEN_ADJUST_SESSIONID, &t)
	return t, err
}

func userRunner(t *testing.T, sessions UserSession) *runner {
	t.Helper()
	r, err := newRunner(Options{Config: func() (*agent.Config, error) { return agent.Default(), nil }, TempDir: testdir.New(t),
		UserSession: sessions})
	require.NoError(t, err)
	return r
}

func requireCode(t *testing.T, want string, err error) *proto.Error {
	t.Helper()
	var pe *proto.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, want, pe.Code, pe.Message)
	return pe
}

// A user-context job runs through the launcher with the token's user:
// its output, exit code, parameters and run ID come back like a system
// script's; the user's environment replaces the agent's.
// Not parallel: it sets an environment variable of the agent's.
func TestUserContextJobRunsInTheConsoleSession(t *testing.T) {
	r := userRunner(t, NewUserSession())
	t.Setenv("CAIRN_AGENT_ONLY", "agent") // the agent's own environment is not the user's
	res, err := r.Run(t.Context(), nil, proto.ScriptJob{RunID: "run-1", Language: "cmd", TimeoutSeconds: 60, RunAs: proto.RunAsCurrentUser,
		Parameters: map[string]string{"greeting": "hi there"},
		Body:       "@echo off\r\necho %CAIRN_PARAM_GREETING%/%CAIRN_RUN_ID%/[%CAIRN_AGENT_ONLY%]\r\necho oops>&2\r\nexit /b 3\r\n"})
	require.NoError(t, err)
	require.Equal(t, 3, res.ExitCode)
	require.Equal(t, "hi there/run-1/[]\r\n", res.Stdout)
	require.Equal(t, "oops\r\n", res.Stderr)
	require.False(t, res.TimedOut)
}

// Nobody signed in: the job answers no_active_user_session and runs
// nothing; a failing launch is op failed, with nothing run either.
func TestUserContextWithoutAUser(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(testdir.New(t), "ran")
	body := "@type nul > \"" + marker + "\"\r\n"
	r := userRunner(t, wtsSession{token: func() (windows.Token, error) { return 0, noSession("nobody is signed in") }})
	_, err := r.Run(t.Context(), nil, proto.ScriptJob{RunID: "run-1", Language: "cmd", Body: body, TimeoutSeconds: 5, RunAs: proto.RunAsCurrentUser})
	requireCode(t, proto.CodeNoActiveUserSession, err)
	r = userRunner(t, wtsSession{token: func() (windows.Token, error) { return 0, errors.New("WTSQueryUserToken: access denied") }})
	_, err = r.Run(t.Context(), nil, proto.ScriptJob{RunID: "run-1", Language: "cmd", Body: body, TimeoutSeconds: 5, RunAs: proto.RunAsCurrentUser})
	pe := requireCode(t, proto.CodeOpFailed, err)
	require.Contains(t, pe.Message, "access denied")
	require.NoFileExists(t, marker)
}

// The script's directory gets an inheritable read entry for the user.
func TestGrantReadAddsTheUser(t *testing.T) {
	t.Parallel()
	dir := testdir.New(t)
	tok, err := processToken()
	require.NoError(t, err)
	defer tok.Close()
	tu, err := tok.GetTokenUser()
	require.NoError(t, err)
	require.NoError(t, grantRead(dir, tu.User.Sid))
	sd, err := windows.GetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	require.NoError(t, err)
	require.Contains(t, sd.String(), tu.User.Sid.String())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600))
}

// Windows agents advertise the currentuser helper context.
func TestWindowsAdvertisesCurrentUser(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{proto.HelperCurrentUser}, HelperContexts())
}

// Wine attaches its one session to the console and answers
// WTSQueryUserToken with the user's token.
func TestActiveConsoleUserTokenUnderWine(t *testing.T) {
	t.Parallel()
	require.NotEqual(t, uint32(noConsoleSession), windows.WTSGetActiveConsoleSessionId())
	tok, err := activeConsoleUserToken()
	require.NoError(t, err)
	require.NotZero(t, tok)
	require.NoError(t, tok.Close())
}

// A user-context script that outlives its timeout is ended (taskkill /T,
// then TerminateProcess) and reported timed out with its output so far.
func TestUserContextTimeout(t *testing.T) {
	t.Parallel()
	r := userRunner(t, NewUserSession())
	res, err := r.Run(t.Context(), nil, proto.ScriptJob{RunID: "run-1", Language: "cmd", TimeoutSeconds: 1, RunAs: proto.RunAsCurrentUser,
		Body: "@echo off\r\necho started\r\n:spin\r\ngoto spin\r\n"})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, -1, res.ExitCode)
	require.Equal(t, "started\r\n", res.Stdout)
}
