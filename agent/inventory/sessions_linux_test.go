package inventory

import (
	"testing"
	"time"

	"github.com/shirou/gopsutil/v4/host"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

func TestMergeSessions(t *testing.T) {
	t.Parallel()
	login := time.Date(2026, 1, 19, 13, 51, 57, 0, time.UTC)
	logind := []proto.Session{
		{Username: "bob", TTY: "seat0", Type: "wayland", SessionID: "c1", Active: true},
		{Username: "alice", TTY: "pts/0", Type: "ssh", Remote: "192.0.2.10", SessionID: "3", Active: true},
	}
	utmp := []host.UserStat{
		{User: "alice", Terminal: "pts/0", Host: "192.0.2.10", Started: int(login.Unix())}, // logind has it
		{User: "carol", Terminal: "tty1", Started: int(login.Unix())},
		{User: "dave", Terminal: "pts/3", Host: "198.51.100.4"},
		{User: "erin", Terminal: "pts/4", Host: ":0"},
		{User: "", Terminal: "pts/9"}, // a dead entry
	}
	require.Equal(t, []proto.Session{
		{Username: "alice", TTY: "pts/0", Type: "ssh", Remote: "192.0.2.10", SessionID: "3", Active: true},
		{Username: "bob", TTY: "seat0", Type: "wayland", SessionID: "c1", Active: true},
		{Username: "carol", TTY: "tty1", Type: "tty", LoginAt: &login, Active: true},
		{Username: "dave", TTY: "pts/3", Type: "ssh", Remote: "198.51.100.4", Active: true},
		{Username: "erin", TTY: "pts/4", Type: "x11", Remote: ":0", Active: true},
	}, mergeSessions(logind, utmp))
	require.Equal(t, []proto.Session{}, mergeSessions(nil, nil), "nobody logged in is an empty, collected list")
}
