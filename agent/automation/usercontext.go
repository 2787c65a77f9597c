package automation

import (
	"os/exec"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// UserSession starts scripts in the active user's session (SPEC agent
// behaviour 12: the privileged agent launches the signed payload into the
// signed-in user's session; no helper process of the user ever talks to
// the Engine). The Windows implementation (NewUserSession) takes the
// console session's user token (WTSGetActiveConsoleSessionId,
// WTSQueryUserToken), makes a primary token of it (DuplicateTokenEx), the
// user's environment (CreateEnvironmentBlock) and starts the interpreter
// with CreateProcessAsUser (os/exec with SysProcAttr.Token). Output and
// exit code are captured and reported like a system script's.
type UserSession interface {
	// Prepare makes cmd start as the active user: it sets cmd's token
	// and cmd.Env (the user's environment followed by extra), and lets
	// the user read dir, the script's directory. release frees what
	// Prepare took; call it once cmd has ended. No signed-in user is a
	// proto.CodeNoActiveUserSession error.
	Prepare(cmd *exec.Cmd, dir string, extra []string) (release func(), err error)
}

// HelperContexts are the helper contexts this agent advertises in
// connect_agent: currentuser where it can launch into user sessions
// (Windows), none elsewhere.
func HelperContexts() []string {
	if userContextSupported {
		return []string{proto.HelperCurrentUser}
	}
	return []string{}
}
