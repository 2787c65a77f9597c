package inventory

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shirou/gopsutil/v4/common"
	"github.com/stretchr/testify/require"
)

// utmpRecord is glibc's struct utmp on Linux (384 bytes).
type utmpRecord struct {
	Type    int16
	_       [2]byte
	Pid     int32
	Line    [32]byte
	ID      [4]byte
	User    [32]byte
	Host    [256]byte
	Exit    [2]int16
	Session int32
	Sec     int32
	Usec    int32
	Addr    [4]int32
	_       [20]byte
}

// writeUtmp writes var/run/utmp under dir with one record per
// {type, user, line, host}.
func writeUtmp(t *testing.T, dir string, records ...[4]string) {
	t.Helper()
	var buf bytes.Buffer
	for _, r := range records {
		var u utmpRecord
		switch r[0] {
		case "user":
			u.Type = 7 // USER_PROCESS
		case "dead":
			u.Type = 8 // DEAD_PROCESS
		case "login":
			u.Type = 6 // LOGIN_PROCESS
		}
		copy(u.User[:], r[1])
		copy(u.Line[:], r[2])
		copy(u.Host[:], r[3])
		u.Sec = int32(time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC).Unix())
		require.NoError(t, binary.Write(&buf, binary.LittleEndian, &u))
	}
	require.Equal(t, 384*len(records), buf.Len())
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "run"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run", "utmp"), buf.Bytes(), 0o600))
}

// SignedInUsers, which decides whether a patch reboot is skipped, lists
// the users of utmp's user processes (not dead or login ones) merged with
// logind's user-class sessions (a greeter is nobody), from a fake utmp and
// a fake loginctl on PATH; logind that cannot be asked is an error, not
// "nobody". Not parallel: it sets PATH and stands in for systemd.
func TestSignedInUsersFromUtmpAndLogind(t *testing.T) {
	dir := t.TempDir()
	writeUtmp(t, dir, [4]string{"user", "alice", "pts/0", "10.0.0.5"}, [4]string{"dead", "bob", "pts/1", ""},
		[4]string{"login", "LOGIN", "tty1", ""})
	ctx := context.WithValue(t.Context(), common.EnvKey, common.EnvMap{common.HostVarEnvKey: dir})
	bin := t.TempDir()
	loginctl := `#!/bin/sh
[ -e ` + filepath.Join(bin, "broken") + ` ] && { echo "Failed to connect to bus" >&2; exit 1; }
case "$1 $2" in
"list-sessions --no-legend") printf '  3 1000 carol seat0 tty2\n c7 120 gdm seat0 tty1\n'; exit 0 ;;
"show-session 3") printf 'Id=3\nName=carol\nTTY=tty2\nSeat=seat0\nRemote=no\nType=wayland\nClass=user\nActive=yes\n' ;;
"show-session c7") printf 'Id=c7\nName=gdm\nTTY=tty1\nSeat=seat0\nRemote=no\nType=wayland\nClass=greeter\nActive=no\n' ;;
*) exit 1 ;;
esac
`
	require.NoError(t, os.WriteFile(filepath.Join(bin, "loginctl"), []byte(loginctl), 0o700))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	for _, tc := range []struct {
		name   string
		logind bool
		want   []string
	}{
		{"utmp only", false, []string{"alice"}},
		{"utmp and logind", true, []string{"alice", "carol"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := logindRuns
			logindRuns = func() bool { return tc.logind }
			t.Cleanup(func() { logindRuns = prev })
			users, err := SignedInUsers(ctx)
			require.NoError(t, err)
			require.Equal(t, tc.want, users)
		})
	}

	// Nobody in utmp, logind not running: nobody.
	empty := t.TempDir()
	writeUtmp(t, empty, [4]string{"dead", "bob", "pts/1", ""})
	prev := logindRuns
	logindRuns = func() bool { return false }
	t.Cleanup(func() { logindRuns = prev })
	users, err := SignedInUsers(context.WithValue(t.Context(), common.EnvKey, common.EnvMap{common.HostVarEnvKey: empty}))
	require.NoError(t, err)
	require.Empty(t, users)

	// logind runs but cannot be asked: an error, never "nobody".
	logindRuns = func() bool { return true }
	require.NoError(t, os.WriteFile(filepath.Join(bin, "broken"), nil, 0o600))
	_, err = SignedInUsers(ctx)
	require.Error(t, err)
}
