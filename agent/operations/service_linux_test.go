package operations

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	sddbus "github.com/coreos/go-systemd/v22/dbus"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/inventory"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// daemonScript is a small LSB init script: start runs a background sleep
// with a pidfile, stop kills it, status checks it. The sleep keeps the
// script's stdout and stderr, as careless daemons do, which must not make
// the agent wait for it.
const daemonScript = `#!/bin/sh
### BEGIN INIT INFO
# Short-Description: test daemon
### END INIT INFO
PIDFILE="$(dirname "$0")/$(basename "$0").pid"
running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }
case "$1" in
start) running && exit 0; sleep 3600 & echo $! > "$PIDFILE"; echo started ;;
stop) if [ -f "$PIDFILE" ]; then kill "$(cat "$PIDFILE")"; rm -f "$PIDFILE"; fi; echo stopped ;;
restart) "$0" stop && "$0" start ;;
status) running && exit 0; exit 3 ;;
*) echo "usage: $0 start|stop|restart|status" >&2; exit 2 ;;
esac
`

// setupSysV is setup with a daemon script named name in the InitDir.
func setupSysV(t *testing.T, name string) env {
	t.Helper()
	e := setup(t, Options{})
	require.NoError(t, os.WriteFile(filepath.Join(e.initDir, name), []byte(daemonScript), 0o755))
	t.Cleanup(func() {
		if pid, err := strconv.Atoi(strings.TrimSpace(readFile(filepath.Join(e.initDir, name+".pid")))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return e
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func (e env) service(t *testing.T, name, action string) (proto.ServiceActionResult, *proto.Error) {
	t.Helper()
	var res proto.ServiceActionResult
	pe := e.call(t, proto.EventServiceControl, proto.ServiceActionRequest{Name: name, Action: action}, &res)
	return res, pe
}

func TestSysVServiceActions(t *testing.T) {
	t.Parallel()
	e := setupSysV(t, "demo")
	pidfile := filepath.Join(e.initDir, "demo.pid")

	res, pe := e.service(t, "demo", proto.ServiceStart)
	require.Nil(t, pe)
	want := proto.Service{Name: "demo", State: inventory.SysVRunning, Description: "test daemon"}
	require.Equal(t, proto.ServiceActionResult{Name: "demo", State: inventory.SysVRunning, Service: want, Services: []proto.Service{want}}, res)
	first := readFile(pidfile)
	require.NotEmpty(t, first)

	res, pe = e.service(t, "demo", proto.ServiceRestart)
	require.Nil(t, pe)
	require.Equal(t, inventory.SysVRunning, res.State)
	require.NotEqual(t, first, readFile(pidfile), "a new daemon runs")

	res, pe = e.service(t, "demo", proto.ServiceStop)
	require.Nil(t, pe)
	require.Equal(t, inventory.SysVStopped, res.State)
	require.Equal(t, inventory.SysVStopped, res.Services[0].State, "the list agrees")
	require.NoFileExists(t, pidfile)
}

func TestSysVServiceFailures(t *testing.T) {
	t.Parallel()
	e := setupSysV(t, "demo")
	// A script that fails after a lot of output: the message quotes its
	// end, bounded.
	failing := "#!/bin/sh\nfor i in $(seq 1 500); do echo \"progress line $i\"; done\necho 'cannot bind port 80' >&2\nexit 1\n"
	require.NoError(t, os.WriteFile(filepath.Join(e.initDir, "broken"), []byte(failing), 0o755))

	_, pe := e.service(t, "broken", proto.ServiceStart)
	require.NotNil(t, pe)
	require.Equal(t, proto.CodeOpFailed, pe.Code)
	require.Contains(t, pe.Message, "exited with status 1")
	require.True(t, strings.HasSuffix(pe.Message, "progress line 500\ncannot bind port 80"), pe.Message)
	require.NotContains(t, pe.Message, "progress line 1\n")
	require.Less(t, len(pe.Message), maxOutputTail+200)

	for _, tc := range []struct {
		name, service, action, code string
	}{
		{"unknown service", "nope", proto.ServiceStart, proto.CodeOpNotFound},
		{"empty name", "", proto.ServiceStart, proto.CodeOpInvalid},
		{"path", "../demo", proto.ServiceStart, proto.CodeOpInvalid},
		{"separator", "sub/demo", proto.ServiceStart, proto.CodeOpInvalid},
		{"option", "-demo", proto.ServiceStart, proto.CodeOpInvalid},
		{"hidden", ".demo", proto.ServiceStart, proto.CodeOpInvalid},
		{"control character", "demo\n", proto.ServiceStart, proto.CodeOpInvalid},
		{"too long", strings.Repeat("d", 256), proto.ServiceStart, proto.CodeOpInvalid},
		{"unknown action", "demo", "reload", proto.CodeOpInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, pe := e.service(t, tc.service, tc.action)
			require.NotNil(t, pe)
			require.Equal(t, tc.code, pe.Code, pe.Message)
		})
	}
	require.NoFileExists(t, filepath.Join(e.initDir, "demo.pid"), "nothing was started by a refused request")
}

// fakeSystemctl is a stand-in for systemctl that the systemd tests put
// first on PATH: it logs every call to dir/calls and keeps each unit's
// ActiveState in dir/<unit>.state (a unit without one is not found).
// broken.service fails to start, denied.service is refused, and
// liar.service says its start succeeded but stays inactive.
const fakeSystemctl = `#!/bin/sh
D="$(dirname "$0")"
echo "$*" >> "$D/calls"
cmd=$1; shift
[ "$cmd" = show ] && shift 2
[ "$1" = -- ] && shift
u=$1
case "$cmd" in
show) if [ -f "$D/$u.state" ]; then echo loaded; else echo not-found; fi ;;
start|restart)
  case "$u" in
  broken.service) echo failed > "$D/$u.state"; echo "Job for $u failed because the control process exited with error code." >&2; exit 1 ;;
  denied.service) echo "Failed to start $u: Access denied" >&2; exit 4 ;;
  liar.service) ;;
  *) echo active > "$D/$u.state" ;;
  esac ;;
stop) echo inactive > "$D/$u.state" ;;
is-active) s=$(cat "$D/$u.state" 2>/dev/null || echo inactive); echo "$s"; [ "$s" = active ] && exit 0; exit 3 ;;
list-units) for f in "$D"/*.state; do n=$(basename "$f" .state); s=$(cat "$f"); sub=dead
  [ "$s" = active ] && sub=running; [ "$s" = failed ] && sub=failed; echo "$n loaded $s $sub Test unit"; done ;;
list-unit-files) for f in "$D"/*.state; do echo "$(basename "$f" .state) enabled enabled"; done ;;
*) echo "Unknown command verb $cmd." >&2; exit 1 ;;
esac
`

// setupSystemd puts fakeSystemctl first on PATH, holding the units given
// with their states, and makes systemd's D-Bus unreachable. Tests using it
// do not run in parallel (t.Setenv, and connectSystemd is the package's). It returns
// the fake's directory.
func setupSystemd(t *testing.T, units map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "systemctl"), []byte(fakeSystemctl), 0o755))
	for u, state := range units {
		require.NoError(t, os.WriteFile(filepath.Join(dir, u+".state"), []byte(state+"\n"), 0o644))
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	// Unreachable whatever the host runs, so a host with systemd as init
	// (as root the library would use its private socket) is never touched.
	connect := connectSystemd
	connectSystemd = func(context.Context) (*sddbus.Conn, error) {
		return nil, errors.New("dial unix /run/systemd/private: connect: no such file or directory")
	}
	t.Cleanup(func() { connectSystemd = connect })
	return dir
}

// systemd runs a service action the way the handler does on a host whose
// services are systemd's (controlService; this machine has no systemd as
// init, so the handler itself picks init scripts here).
func systemd(t *testing.T, name, action string) (string, *proto.Error) {
	t.Helper()
	unit, err := controlService(t.Context(), false, "", name, action)
	if err == nil {
		return unit, nil
	}
	var pe *proto.Error
	require.True(t, errors.As(err, &pe), "service actions fail with a *proto.Error, got %T: %v", err, err)
	return unit, pe
}

// TestSystemdServiceActionsWithSystemctl: without systemd's D-Bus the
// agent controls a unit with systemctl and confirms the outcome with
// is-active. Only a host with systemd as init runs the D-Bus path
// (docs/agent.md "Service control").
func TestSystemdServiceActionsWithSystemctl(t *testing.T) {
	dir := setupSystemd(t, map[string]string{"demo.service": "inactive"})
	state := func() string { return strings.TrimSpace(readFile(filepath.Join(dir, "demo.service.state"))) }

	unit, pe := systemd(t, "demo", proto.ServiceStart)
	require.Nil(t, pe)
	require.Equal(t, "demo.service", unit)
	require.Equal(t, "active", state())

	_, pe = systemd(t, "demo.service", proto.ServiceRestart)
	require.Nil(t, pe)
	require.Equal(t, "active", state())

	_, pe = systemd(t, "demo", proto.ServiceStop)
	require.Nil(t, pe)
	require.Equal(t, "inactive", state())

	require.Equal(t, []string{
		"show --property=LoadState --value -- demo.service", "start -- demo.service", "is-active -- demo.service",
		"show --property=LoadState --value -- demo.service", "restart -- demo.service", "is-active -- demo.service",
		"show --property=LoadState --value -- demo.service", "stop -- demo.service", "is-active -- demo.service",
	}, strings.Split(strings.TrimSpace(readFile(filepath.Join(dir, "calls"))), "\n"))
}

func TestSystemdServiceFailuresWithSystemctl(t *testing.T) {
	dir := setupSystemd(t, map[string]string{"broken.service": "inactive", "denied.service": "inactive", "liar.service": "inactive"})
	for _, tc := range []struct {
		service, code, message string
	}{
		{"nope", proto.CodeOpNotFound, "no service nope.service"},
		{"broken", proto.CodeOpFailed, "Job for broken.service failed"},
		{"denied", proto.CodeOpPermission, "Access denied"},
		// systemctl said yes, is-active says otherwise: not a success.
		{"liar", proto.CodeOpFailed, "finished but the unit is inactive"},
	} {
		t.Run(tc.service, func(t *testing.T) {
			_, pe := systemd(t, tc.service, proto.ServiceStart)
			require.NotNil(t, pe)
			require.Equal(t, tc.code, pe.Code, pe.Message)
			require.Contains(t, pe.Message, tc.message)
		})
	}
	require.NotContains(t, readFile(filepath.Join(dir, "calls")), "start -- nope.service", "a unit that is not found is not started")

	// Neither D-Bus nor systemctl: the answer says both.
	t.Setenv("PATH", t.TempDir())
	_, pe := systemd(t, "demo", proto.ServiceStart)
	require.NotNil(t, pe)
	require.Equal(t, proto.CodeOpFailed, pe.Code)
	require.Contains(t, pe.Message, "connecting to systemd")
	require.Contains(t, pe.Message, "no systemctl")
}
