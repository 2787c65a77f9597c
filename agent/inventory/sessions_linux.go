package inventory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v4/host"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// systemdBooted reports whether systemd is the running init, the test
// sd_booted(3) makes: it creates /run/systemd/system early at boot.
func systemdBooted() bool {
	fi, err := os.Stat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

// logindRuns says whether logind's sessions are read: when systemd is
// the running init (a test stands in for it).
var logindRuns = systemdBooted

// pid1Name is the command name of PID 1, for error messages.
func pid1Name() string {
	return cmp.Or(readTrim("/proc/1/comm"), "unknown")
}

// collectSessions reads utmp (gopsutil; missing utmp means nobody logged
// in through it) and, when systemd runs, logind's sessions, which carry
// the session ID, type and active flag utmp lacks. When both know a
// session, logind's row wins.
func collectSessions(ctx context.Context, _ *Collector, inv *proto.Inventory) error {
	utmp, err := host.UsersWithContext(ctx)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("utmp: %w", err)
	}
	var logind []proto.Session
	if logindRuns() {
		if _, err := exec.LookPath("loginctl"); err == nil {
			if logind, err = logindSessions(ctx); err != nil {
				return err
			}
		}
	}
	inv.Sessions = mergeSessions(logind, utmp)
	return nil
}

func logindSessions(ctx context.Context) ([]proto.Session, error) {
	out, _, err := command(ctx, nil, "loginctl", "list-sessions", "--no-legend", "--no-pager")
	if err != nil {
		return nil, err
	}
	args := []string{"show-session", ""}
	for _, p := range loginctlProperties {
		args = append(args, "-p", p)
	}
	var sessions []proto.Session
	var lastErr error
	ids := parseLoginctlList(out)
	for _, id := range ids {
		args[1] = id
		out, _, err := command(ctx, nil, "loginctl", args...)
		if err != nil {
			lastErr = err // the session may have ended since the list
			continue
		}
		ls := parseLoginctlSession(out, time.Local)
		// Greeters, lock screens and the per-user service manager are
		// sessions of logind, not logins of a person.
		if strings.HasPrefix(ls.Class, "user") {
			sessions = append(sessions, ls.Session)
		}
	}
	if len(ids) > 0 && len(sessions) == 0 && lastErr != nil {
		return nil, lastErr
	}
	return sessions, nil
}

// mergeSessions joins logind sessions with utmp records not already
// covered by one (same user and terminal) and sorts them.
func mergeSessions(logind []proto.Session, utmp []host.UserStat) []proto.Session {
	out := append([]proto.Session{}, logind...)
	for _, u := range utmp {
		dup := false
		for _, s := range logind {
			dup = dup || (s.Username == u.User && s.TTY == u.Terminal)
		}
		if dup || u.User == "" {
			continue
		}
		s := proto.Session{Username: u.User, TTY: u.Terminal, Remote: u.Host, Type: utmpType(u.Host), Active: true}
		if u.Started > 0 {
			at := time.Unix(int64(u.Started), 0).UTC()
			s.LoginAt = &at
		}
		out = append(out, s)
	}
	sortSessions(out)
	return out
}

// utmpType guesses the session type utmp does not record: an X display as
// host is a local graphical login, any other host a remote (ssh) login.
func utmpType(host string) string {
	switch {
	case strings.HasPrefix(host, ":"):
		return "x11"
	case host != "":
		return "ssh"
	default:
		return "tty"
	}
}
