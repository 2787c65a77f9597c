package api_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/automation"
	"github.com/cairn-rmm/cairn/agent/inventory"
	"github.com/cairn-rmm/cairn/agent/operations"
	"github.com/cairn-rmm/cairn/agent/roles"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// uninstallAgent is an enrolled agent served by the real script runner
// and the real inventory over this machine's dpkg. Removing a real
// package needs root, so the scripts it runs find stand-in package
// managers first on their PATH (dir): dpkg-query says every package is
// installed, apt-get and the vendor uninstaller log their arguments to
// dir/calls and succeed.
func (f *fixture) uninstallAgent(t *testing.T, admin string, site int64, hostname string) (a *scriptAgent, dir string) {
	t.Helper()
	dir = t.TempDir()
	log := filepath.Join(dir, "calls")
	for name, body := range map[string]string{
		"dpkg-query":       "printf 'install ok installed'\n",
		"apt-get":          "echo \"$0 $*\" >> " + log + "\n",
		"vendor-uninstall": "echo \"$0 $*\" >> " + log + "\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"exit 0\n"), 0o755))
	}
	ta := f.enrolled(t, admin, site, hostname)
	a = &scriptAgent{testAgent: ta, trusted: ta.scriptKeys}
	handlers := runtime.NewHandlers()
	require.NoError(t, automation.Register(handlers, automation.Options{Config: a.config, OutputInterval: 100 * time.Millisecond,
		TempDir: t.TempDir(), Path: dir + string(os.PathListSeparator) + os.Getenv("PATH")}))
	inv := inventory.New(roles.New(time.Now), inventory.Options{})
	require.NoError(t, operations.Register(handlers, operations.Options{Inventory: inv}))
	a.handlers = handlers
	a.serve(t)
	return a, dir
}

func uninstallCalls(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "calls"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestSoftwareUninstall(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "uninst")
	other := f.createSite(t, admin, "uninstother")
	a, dir := f.uninstallAgent(t, admin, site, "uninst-01")
	// The stored inventory comes from this machine's dpkg, which lists
	// itself.
	r := f.do(t, "POST", "/api/device/software/uninst-01/refresh", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)

	// waitRun waits for a run to end and returns it.
	waitRun := func(t *testing.T, url string) response {
		t.Helper()
		var run response
		require.Eventually(t, func() bool {
			run = f.do(t, "GET", url, admin, nil)
			return run.Status == 200 && run.Body["status"] != "pending" && run.Body["status"] != "running"
		}, 2*time.Minute, 100*time.Millisecond)
		return run
	}
	refreshesAfter := func(what string) int {
		rows := f.do(t, "GET", "/api/device/activity/uninst-01?limit=200", admin, nil).Body["activity"].([]any)
		n := 0
		for _, row := range rows {
			m := row.(map[string]any)
			if m["kind"] == "software_refresh" && strings.HasPrefix(m["summary"].(string), "Refresh software inventory (after "+what+"): ") && m["status"] == "completed" {
				n++
			}
		}
		return n
	}

	t.Run("the package manager removes it and the inventory is read again", func(t *testing.T) {
		r := f.do(t, "POST", "/api/device/software/uninst-01/uninstall", admin, map[string]any{"name": "dpkg"})
		require.Equal(t, 202, r.Status, r.Raw)
		require.Equal(t, "dpkg", r.Body["name"])
		require.Equal(t, false, r.Body["override"])
		require.Equal(t, "sh", r.Body["language"])
		run := waitRun(t, r.Body["url"].(string))
		require.Equal(t, "succeeded", run.Body["status"], run.Raw)
		require.Equal(t, "software_uninstall", run.Body["kind"])
		require.Equal(t, []string{filepath.Join(dir, "apt-get") + " remove -y -q -- dpkg"}, uninstallCalls(t, dir))
		require.Eventually(t, func() bool { return refreshesAfter("Uninstall dpkg") == 1 }, time.Minute, 100*time.Millisecond)
	})

	t.Run("an override's command runs instead", func(t *testing.T) {
		o := f.do(t, "POST", "/api/device/software/uninst-01/uninstall-override", admin, map[string]any{"name": "dpkg",
			"executable": filepath.Join(dir, "vendor-uninstall"), "arguments": "--quiet --all"})
		require.Equal(t, 200, o.Status, o.Raw)
		r := f.do(t, "POST", "/api/device/software/uninst-01/uninstall", admin, map[string]any{"name": "dpkg"})
		require.Equal(t, 202, r.Status, r.Raw)
		require.Equal(t, true, r.Body["override"])
		run := waitRun(t, r.Body["url"].(string))
		require.Equal(t, "succeeded", run.Body["status"], run.Raw)
		calls := uninstallCalls(t, dir)
		require.Equal(t, filepath.Join(dir, "vendor-uninstall")+" --quiet --all", calls[len(calls)-1])
		o = f.do(t, "POST", "/api/device/software/uninst-01/uninstall-override", admin, map[string]any{"name": "dpkg", "remove": true})
		require.Equal(t, 200, o.Status, o.Raw)
	})

	t.Run("a block refuses it", func(t *testing.T) {
		b := f.do(t, "POST", "/api/device/software/uninst-01/uninstall-block", admin, map[string]any{"name": "dpkg", "reason": "the system needs it"})
		require.Equal(t, 200, b.Status, b.Raw)
		before := len(uninstallCalls(t, dir))
		r := f.do(t, "POST", "/api/device/software/uninst-01/uninstall", admin, map[string]any{"name": "dpkg"})
		require.Equal(t, 409, r.Status, r.Raw)
		require.Equal(t, "uninstall_blocked", r.Body["error"])
		require.Contains(t, r.Body["message"], "the system needs it")
		require.Len(t, uninstallCalls(t, dir), before, "nothing ran")
		u := f.do(t, "POST", "/api/device/software/uninst-01/uninstall-unblock", admin, map[string]any{"name": "dpkg"})
		require.Equal(t, 200, u.Status, u.Raw)
	})

	t.Run("bad requests", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			body  any
			field string
		}{
			{"no name", map[string]any{}, "name"},
			{"name too long", map[string]any{"name": strings.Repeat("x", 300)}, "name"},
			{"version too long", map[string]any{"name": "dpkg", "version": strings.Repeat("1", 200)}, "version"},
		} {
			r := f.do(t, "POST", "/api/device/software/uninst-01/uninstall", admin, tc.body)
			require.Equal(t, 400, r.Status, tc.name+": "+r.Raw)
			require.Equal(t, "validation_failed", r.Body["error"])
			require.NotEmpty(t, r.field(tc.field), r.Raw)
		}
		r := f.do(t, "POST", "/api/device/software/uninst-01/uninstall", admin, map[string]any{"name": "no-such-package-here"})
		require.Equal(t, 404, r.Status, r.Raw)
	})

	t.Run("out of scope answers as missing", func(t *testing.T) {
		op := f.scopedOperatorOf(t, admin, "uninst-outsider", other)
		r := f.do(t, "POST", "/api/device/software/uninst-01/uninstall", op, map[string]any{"name": "dpkg"})
		require.Equal(t, 404, r.Status, r.Raw)
		require.Equal(t, f.do(t, "POST", "/api/device/software/no-such-host/uninstall", op, map[string]any{"name": "dpkg"}).Body, r.Body)
	})

	t.Run("a quarantined device gets nothing", func(t *testing.T) {
		before := len(uninstallCalls(t, dir))
		q := f.do(t, "POST", "/api/devices/"+a.guid+"/quarantine", admin, nil)
		require.Equal(t, 200, q.Status, q.Raw)
		r := f.do(t, "POST", "/api/device/software/uninst-01/uninstall", admin, map[string]any{"name": "dpkg"})
		require.Equal(t, 409, r.Status, r.Raw)
		require.Equal(t, "device_quarantined", r.Body["error"])
		require.Len(t, uninstallCalls(t, dir), before)
	})
}
