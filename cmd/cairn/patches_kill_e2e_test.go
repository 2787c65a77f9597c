package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/patches"
	"github.com/cairn-rmm/cairn/agent/patches/apttest"
)

// kill -9 of the Engine during a wave of patch installs on real agents,
// each on its own private apt root (CAIRN_AGENT_APT_ROOT) with
// cairn-hello 1.0 installed and 1.1 in a local repository: once the
// Engine is back, every device ends with the update installed, one
// install row each, and apt upgraded each root's package exactly once.
func TestPatchInstallWaveSurvivesEngineKill(t *testing.T) {
	t.Parallel()
	e := newUpdateEnv(t, "cairn-patch-kill-e2e-")
	const key = "pkg:" + apttest.Package + "=1.1"
	type device struct {
		ag   *agentProc
		root *apttest.Root
	}
	var devs []device
	for i := range 3 {
		root := apttest.New(t)
		ag, exe := e.agent(t, fmt.Sprintf("patch-kill-%02d", i))
		ag.env = []string{patches.AptRootEnv + "=" + root.Root}
		e.run(t, ag, exe)
		devs = append(devs, device{ag, root})
	}
	view := func(d device) map[string]any {
		return e.eng.call(t, "GET", "/api/device/patches/"+d.ag.hostname, e.token, nil)
	}
	// rows are a view's patches (by key) or installs (by title) with
	// their states.
	rows := func(v map[string]any, field string) []string {
		var out []string
		for _, r := range asList(v[field]) {
			m := r.(map[string]any)
			id := m["patch_key"]
			if field == "installs" {
				id = m["title"]
			}
			out = append(out, fmt.Sprintf("%v %v", id, m["state"]))
		}
		return out
	}
	for _, d := range devs {
		require.True(t, assertEventually(2*time.Minute, func() bool {
			return strings.Join(rows(view(d), "patches"), ",") == key+" pending"
		}), "%s never reported the pending update: %v\n%s", d.ag.hostname, rows(view(d), "patches"), d.ag.output())
	}

	// The wave: a patch_install job per device, from its draft, run now.
	for _, d := range devs {
		draft := e.eng.post(t, "/api/device/patches/"+d.ag.hostname+"/install-draft", e.token, map[string]any{"patch_keys": []string{key}})
		job := e.eng.post(t, "/api/scheduled_jobs", e.token, map[string]any{"name": draft["name"], "kind": "patch_install",
			"assembly_id": nil, "workflow_id": nil, "parameters": draft["parameters"], "targets": draft["targets"],
			"schedule": map[string]any{"type": "manual"}, "options": draft["options"], "enabled": true})
		e.eng.post(t, fmt.Sprintf("/api/scheduled_jobs/%v/rerun", job["id"]), e.token, nil)
	}
	// Killed once an install is dispatched, before the wave is done.
	require.True(t, assertEventually(3*time.Minute, func() bool {
		for _, d := range devs {
			if len(asList(view(d)["installs"])) > 0 {
				return true
			}
		}
		return false
	}), "no install started")
	require.NoError(t, e.eng.cmd.Process.Signal(syscall.SIGKILL))
	_, _ = e.eng.cmd.Process.Wait()

	e.start(t)
	e.eng.post(t, "/api/bootstrap/aegis/unlock", "", map[string]any{"passphrase": "e2e test passphrase"})
	for _, d := range devs {
		ok := assertEventually(5*time.Minute, func() bool {
			v := view(d)
			return strings.Join(rows(v, "patches"), ",") == key+" installed" &&
				strings.Join(rows(v, "installs"), ",") == apttest.Package+" 1.1 installed"
		})
		v := view(d)
		require.True(t, ok, "%s: patches %v installs %v\nagent output:\n%s", d.ag.hostname, rows(v, "patches"), rows(v, "installs"), d.ag.output())
		hist, err := os.ReadFile(d.root.Path("var/log/apt/history.log"))
		require.NoError(t, err)
		require.Equal(t, 1, strings.Count(string(hist), "Upgrade: "+apttest.Package), "%s: apt upgraded once:\n%s", d.ag.hostname, hist)
		b, err := os.ReadFile(d.root.Path("usr/share/cairn-hello/version"))
		require.NoError(t, err)
		require.Equal(t, "1.1\n", string(b))
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
