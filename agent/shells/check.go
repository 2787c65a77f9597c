package shells

import (
	"runtime"
	"time"

	"github.com/cairn-rmm/cairn/agent/roles"
)

// Check is the remote_shell role's health check: it starts a shell the
// way an operator's session would (a PTY on Linux, pipes on Windows) and
// ends it at once. A platform without shells is Unsupported.
func Check() error {
	if !supported {
		return roles.Unsupported("remote shells are not supported on %s", runtime.GOOS)
	}
	t, err := startTerminal(80, 24)
	if err != nil {
		return err
	}
	t.Kill(time.Second)
	return t.Close()
}
