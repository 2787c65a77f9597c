//go:build !windows

package automation

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/cairn-rmm/cairn/agent/proto"
)

const userContextSupported = false

// NewUserSession is nil off Windows: user-context jobs are refused with
// proto.CodeUserContextUnsupported.
func NewUserSession() UserSession { return nil }

// startUser is never reached off Windows: NewUserSession is nil there.
func startUser(*exec.Cmd) (process, error) {
	return nil, &proto.Error{Code: proto.CodeUserContextUnsupported, Message: "user-context jobs are not supported on " + runtime.GOOS}
}

// userContextRefusal is why a user-context job cannot run here. A
// headless host (no X or Wayland display socket) says so in the SPEC's
// words: the user's session is a desktop-only surface.
func userContextRefusal() error { return refusal(desktopActive(displaySockets)) }

func refusal(desktop bool) error {
	msg := fmt.Sprintf("user-context jobs are not supported on %s: the agent runs scripts as root only", runtime.GOOS)
	if !desktop {
		msg = proto.NoDesktopEnvironment + ": " + msg
	}
	return &proto.Error{Code: proto.CodeUserContextUnsupported, Message: msg}
}

// displaySockets are where a running desktop's display server listens.
var displaySockets = []string{"/tmp/.X11-unix/X*", "/run/user/*/wayland-*"}

// desktopActive reports whether a display server listens on one of the
// sockets patterns match.
func desktopActive(patterns []string) bool {
	for _, pattern := range patterns {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			for _, p := range m {
				if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
					return true
				}
			}
		}
	}
	return false
}
