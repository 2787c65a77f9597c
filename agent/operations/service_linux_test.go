package operations

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

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
