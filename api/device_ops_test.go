package api_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/files"
	"github.com/cairn-rmm/cairn/agent/inventory"
	"github.com/cairn-rmm/cairn/agent/operations"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// opAgent answers operations on a test agent's socket with the real
// agent handlers (agent/ops) over this machine's /proc, dpkg and a private
// init-script directory, and counts what it was asked.
type opAgent struct {
	*testAgent
	conn    *websocket.Conn
	initDir string

	mu   sync.Mutex
	seen map[string]int // event type -> requests received
}

func (o *opAgent) count(typ string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen[typ]
}

// opsAgent enrolls hostname in site, connects its socket and serves it.
func (f *fixture) opsAgent(t *testing.T, admin string, site int64, hostname string) *opAgent {
	t.Helper()
	a := f.enrolled(t, admin, site, hostname)
	o := &opAgent{testAgent: a, initDir: t.TempDir(), seen: map[string]int{}}
	handlers := runtime.NewHandlers()
	inv := inventory.New(roles.New(time.Now), inventory.Options{InitDir: o.initDir, InitScripts: true})
	require.NoError(t, operations.Register(handlers, operations.Options{Inventory: inv, Grace: 5 * time.Second}))
	require.NoError(t, files.Register(handlers, files.Options{}))
	o.conn = a.connect(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); o.conn.CloseNow(); <-done })
	go func() {
		defer close(done)
		o.serve(ctx, handlers)
	}()
	return o
}

func (o *opAgent) serve(ctx context.Context, handlers *runtime.Handlers) {
	serveSocketSeeing(ctx, o.conn, handlers, nil, func(typ string) {
		o.mu.Lock()
		o.seen[typ]++
		o.mu.Unlock()
	})
}

// initScript writes a SysV script that runs a background sleep with a
// pidfile under dir, so service actions control a real process.
func initScript(t *testing.T, dir, name string) {
	t.Helper()
	pidfile := filepath.Join(dir, name+".pid")
	script := fmt.Sprintf(`#!/bin/sh
PIDFILE=%q
running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }
case "$1" in
start) running && exit 0; sleep 100000 >/dev/null 2>&1 & echo $! > "$PIDFILE" ;;
stop) if running; then kill "$(cat "$PIDFILE")"; fi; rm -f "$PIDFILE" ;;
restart) "$0" stop; "$0" start ;;
status) running && exit 0; exit 3 ;;
*) exit 2 ;;
esac
`, pidfile)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755))
	t.Cleanup(func() { _ = exec.Command(filepath.Join(dir, name), "stop").Run() })
}

func TestDeviceOperations(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "ops")
	o := f.opsAgent(t, admin, site, "ops-01")
	initScript(t, o.initDir, "cairn-demo")

	t.Run("processes", func(t *testing.T) {
		r := f.do(t, "GET", "/api/device/processes/ops-01?max_age_seconds=0", admin, nil)
		require.Equal(t, 200, r.Status, r.Raw)
		require.NotEmpty(t, r.Body["captured_at"])
		pids := map[float64]bool{}
		for _, p := range r.Body["processes"].([]any) {
			pids[p.(map[string]any)["pid"].(float64)] = true
		}
		require.True(t, pids[float64(os.Getpid())], "the snapshot lists this test's own process")
		asked := o.count(proto.EventProcessManagement)

		cached := f.do(t, "GET", "/api/device/processes/ops-01?max_age_seconds=3600", admin, nil)
		require.Equal(t, 200, cached.Status, cached.Raw)
		require.Len(t, cached.Body["processes"], len(r.Body["processes"].([]any)), "the stored snapshot answers")
		require.Equal(t, asked, o.count(proto.EventProcessManagement), "a fresh enough snapshot asks the agent nothing")
	})

	t.Run("terminate", func(t *testing.T) {
		cmd := exec.Command("sleep", "100000")
		require.NoError(t, cmd.Start())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })

		wrong := f.do(t, "POST", "/api/device/processes/ops-01/terminate", admin, map[string]any{"pid": cmd.Process.Pid, "name": "bash"})
		require.Equal(t, 409, wrong.Status, wrong.Raw)
		require.Equal(t, proto.CodeOpMismatch, wrong.Body["error"])

		r := f.do(t, "POST", "/api/device/processes/ops-01/terminate", admin, map[string]any{"pid": cmd.Process.Pid, "name": "sleep"})
		require.Equal(t, 200, r.Status, r.Raw)
		require.Equal(t, true, r.Body["terminated"])
		err := <-exited
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		require.Equal(t, syscall.SIGTERM, exit.Sys().(syscall.WaitStatus).Signal())

		gone := f.do(t, "POST", "/api/device/processes/ops-01/terminate", admin, map[string]any{"pid": cmd.Process.Pid, "name": "sleep"})
		require.Equal(t, 404, gone.Status, gone.Raw)
	})

	t.Run("services", func(t *testing.T) {
		for _, step := range []struct{ action, state string }{{"start", "running"}, {"restart", "running"}, {"stop", "stopped"}} {
			r := f.do(t, "POST", "/api/device/services/ops-01/action", admin, map[string]any{"name": "cairn-demo", "action": step.action})
			require.Equal(t, 200, r.Status, r.Raw)
			require.Equal(t, map[string]any{"name": "cairn-demo", "state": step.state}, r.Body, step.action)
		}
		list := f.do(t, "GET", "/api/device/services/ops-01", admin, nil)
		require.Equal(t, 200, list.Status, list.Raw)
		var found map[string]any
		for _, s := range list.Body["services"].([]any) {
			if s.(map[string]any)["name"] == "cairn-demo" {
				found = s.(map[string]any)
			}
		}
		require.NotNil(t, found, "the action's answer refreshed the stored services")
		require.Equal(t, "stopped", found["state"])

		missing := f.do(t, "POST", "/api/device/services/ops-01/action", admin, map[string]any{"name": "no-such-service", "action": "start"})
		require.Equal(t, 404, missing.Status, missing.Raw)
	})

	t.Run("software and patches", func(t *testing.T) {
		r := f.do(t, "POST", "/api/device/software/ops-01/refresh", admin, nil)
		require.Equal(t, 200, r.Status, r.Raw)
		require.Greater(t, r.Body["software_count"].(float64), 0.0, "dpkg lists packages here")
		p := f.do(t, "POST", "/api/device/patches/ops-01/refresh", admin, nil)
		require.Equal(t, 200, p.Status, p.Raw)
		require.Contains(t, p.Body, "patch_count")
		list := f.do(t, "GET", "/api/device/patches/ops-01", admin, nil)
		require.Equal(t, 200, list.Status, list.Raw)
		require.Len(t, list.Body["patches"], int(p.Body["patch_count"].(float64)))
	})

	t.Run("activity", func(t *testing.T) {
		r := f.do(t, "GET", "/api/device/activity/ops-01?limit=200", admin, nil)
		require.Equal(t, 200, r.Status, r.Raw)
		kinds := map[string]map[string]any{}
		for _, a := range r.Body["activity"].([]any) {
			row := a.(map[string]any)
			if _, seen := kinds[row["kind"].(string)]; !seen {
				kinds[row["kind"].(string)] = row
			}
		}
		stop := kinds["service_stop"]
		require.NotNil(t, stop, "every operation is in the device's history")
		require.Equal(t, "completed", stop["status"])
		require.Equal(t, admin != "", stop["actor"] != "")
		meta := stop["metadata"].(map[string]any)
		require.Contains(t, meta, "duration_ms")
		require.Equal(t, proto.EventServiceControl, meta["type"])
		mismatch := kinds["process_terminate"]
		require.NotNil(t, mismatch)
		require.Contains(t, []string{"completed", "failed"}, mismatch["status"])
		for _, k := range []string{"process_snapshot", "service_start", "service_restart", "software_refresh", "patch_refresh"} {
			require.Contains(t, kinds, k)
		}
	})
}

func TestDeviceOperationsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "opsno")
	other := f.createSite(t, admin, "opsother")
	o := f.opsAgent(t, admin, site, "opsno-01")
	f.enrolled(t, admin, site, "opsno-nosocket")

	for _, tc := range []struct {
		name, method, path string
		body               any
		field              string
	}{
		{"max age not a number", "GET", "/api/device/processes/opsno-01?max_age_seconds=soon", nil, "max_age_seconds"},
		{"max age negative", "GET", "/api/device/processes/opsno-01?max_age_seconds=-1", nil, "max_age_seconds"},
		{"pid missing", "POST", "/api/device/processes/opsno-01/terminate", map[string]any{"name": "sleep"}, "pid"},
		{"pid one", "POST", "/api/device/processes/opsno-01/terminate", map[string]any{"pid": 1, "name": "init"}, "pid"},
		{"name missing", "POST", "/api/device/processes/opsno-01/terminate", map[string]any{"pid": 40}, "name"},
		{"pid wrong type", "POST", "/api/device/processes/opsno-01/terminate", map[string]any{"pid": "40", "name": "x"}, "pid"},
		{"action unknown", "POST", "/api/device/services/opsno-01/action", map[string]any{"name": "cron", "action": "reload"}, "action"},
		{"service path", "POST", "/api/device/services/opsno-01/action", map[string]any{"name": "../bin/sh", "action": "start"}, "name"},
		{"role unknown", "POST", "/api/device/roles/opsno-01/desired-state", map[string]any{"role": "no_such_role", "desired": "stopped"}, "role"},
		{"role desired unknown", "POST", "/api/device/roles/opsno-01/desired-state", map[string]any{"role": "remote_shell", "desired": "paused"}, "desired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, tc.method, tc.path, admin, tc.body)
			require.Equal(t, 400, r.Status, r.Raw)
			require.Equal(t, "validation_failed", r.Body["error"])
			require.NotEmpty(t, r.field(tc.field), r.Raw)
		})
	}

	t.Run("no socket", func(t *testing.T) {
		r := f.do(t, "POST", "/api/device/software/opsno-nosocket/refresh", admin, nil)
		require.Equal(t, 409, r.Status, r.Raw)
		require.Equal(t, "agent_socket_missing", r.Body["error"])
	})

	t.Run("out of scope answers as missing", func(t *testing.T) {
		op := f.scopedOperatorOf(t, admin, "opsno-outsider", other)
		for _, path := range []string{"/api/device/processes/opsno-01", "/api/device/services/opsno-01", "/api/device/patches/opsno-01"} {
			r := f.do(t, "GET", path, op, nil)
			require.Equal(t, 404, r.Status, r.Raw)
			require.Equal(t, f.do(t, "GET", path[:len(path)-len("opsno-01")]+"no-such-host", op, nil).Body, r.Body)
		}
		r := f.do(t, "POST", "/api/device/services/opsno-01/action", op, map[string]any{"name": "cron", "action": "start"})
		require.Equal(t, 404, r.Status, r.Raw)
		r = f.do(t, "POST", "/api/device/roles/opsno-01/desired-state", op, map[string]any{"role": "remote_shell", "desired": "stopped"})
		require.Equal(t, 404, r.Status, r.Raw)
		require.Zero(t, o.count(proto.EventRoleDesiredState), "nothing was sent")
	})

	t.Run("roles the agent needs cannot be stopped", func(t *testing.T) {
		for _, role := range []string{"system_context", "api_websocket", "vpn_tunnel"} {
			r := f.do(t, "POST", "/api/device/roles/opsno-01/desired-state", admin, map[string]any{"role": role, "desired": "stopped"})
			require.Equal(t, 409, r.Status, r.Raw)
			require.Equal(t, proto.CodeRoleNotStoppable, r.Body["error"])
		}
		require.Zero(t, o.count(proto.EventRoleDesiredState), "nothing was sent")
	})

	t.Run("quarantined devices get nothing", func(t *testing.T) {
		before := o.count(proto.EventServiceControl) + o.count(proto.EventProcessManagement)
		q := f.do(t, "POST", "/api/devices/"+o.guid+"/quarantine", admin, nil)
		require.Equal(t, 200, q.Status, q.Raw)
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"POST", "/api/device/services/opsno-01/action", map[string]any{"name": "cron", "action": "start"}},
			{"POST", "/api/device/processes/opsno-01/terminate", map[string]any{"pid": 4242, "name": "x"}},
			{"POST", "/api/device/software/opsno-01/refresh", nil},
			{"POST", "/api/device/roles/opsno-01/desired-state", map[string]any{"role": "remote_shell", "desired": "stopped"}},
		} {
			r := f.do(t, c.method, c.path, admin, c.body)
			require.Equal(t, 409, r.Status, r.Raw)
			require.Equal(t, "device_quarantined", r.Body["error"])
		}
		require.Equal(t, before, o.count(proto.EventServiceControl)+o.count(proto.EventProcessManagement), "nothing was sent")
		require.Zero(t, o.count(proto.EventRoleDesiredState), "nothing was sent")
	})
}

// scopedOperatorOf is an operator assigned to site only.
func (f *fixture) scopedOperatorOf(t *testing.T, admin, name string, site int64) string {
	t.Helper()
	token := f.operator(t, name)
	f.sudo(t, admin)
	r := f.do(t, "POST", "/api/user_site_assignments/assign", admin, map[string]any{"usernames": []string{name}, "site_ids": []int64{site}})
	require.Equal(t, 200, r.Status, r.Raw)
	return token
}
