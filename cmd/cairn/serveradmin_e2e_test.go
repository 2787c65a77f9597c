package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The Server page's view of a real Engine with a real agent connected
// (issue 26): the site's worker counts the agent as online and connected
// with Temporal's pollers and a Temporal UI link, and the Engine's own
// log file is readable through the logs route, redacted.
func TestServerAdministrationEndToEnd(t *testing.T) {
	t.Parallel()
	tmp, agentBin := agentWorkspace(t, "cairn-serveradmin-e2e-")
	// INVOCATION_ID: as if systemd ran it, so the Engine's restart is
	// allowed (the supervisor's start-again is not part of the test).
	eng := startServe(t, filepath.Join(tmp, "data"), "CAIRN_TEMPORAL_UI_ORIGINS=http://temporal-ui.test:8233", "INVOCATION_ID=e2e-invocation")
	token := eng.signIn(t)
	site := eng.post(t, "/api/sites", token, map[string]any{"name": "Admin", "site_worker_slug": "admin-e2e"})
	eng.post(t, "/api/sites", token, map[string]any{"name": "Empty", "site_worker_slug": "empty-e2e"})
	code := eng.post(t, "/api/admin/enrollment-codes", token, map[string]any{"site_id": site["site_id"]})["code"].(string)
	caFile := filepath.Join(tmp, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, eng.checkHTTPS(t), 0o644))
	ag := startAgent(t, agentBin, tmp, "admin-alpha", "enroll", "--server", eng.httpsBase, "--code", code, "--ca-file", caFile)
	eng.post(t, "/api/admin/device-approvals/"+eng.waitApproval(t, token, ag.hostname)+"/approve", token, nil)
	ag.waitExit(t, 60*time.Second)
	ag.cfg = loadAgentConfig(t, ag.dir)
	ag.run(t, agentBin)
	eng.waitStatus(t, token, ag, "Connected", 120*time.Second)

	// Workers: the agent's site counts it online and connected; the empty
	// site counts nothing; both are polled by their site worker.
	bySlug := func() map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, s := range eng.call(t, "GET", "/api/server/workers", token, nil)["sites"].([]any) {
			m := s.(map[string]any)
			out[m["site_worker_slug"].(string)] = m
		}
		return out
	}
	var sites map[string]map[string]any
	require.True(t, assertEventually(60*time.Second, func() bool {
		sites = bySlug()
		a := sites["admin-e2e"]
		return a["connected_agents"] == 1.0 && a["online_devices"] == 1.0 && len(a["pollers"].([]any)) > 0 &&
			len(sites["empty-e2e"]["pollers"].([]any)) > 0
	}), "workers: %v", sites)
	a, empty := sites["admin-e2e"], sites["empty-e2e"]
	require.Equal(t, 1.0, a["total_devices"])
	require.Equal(t, "running", a["state"])
	require.Equal(t, map[string]any{"operations_running": 0.0, "operations_queued": 0.0, "jobs_running": 0.0, "jobs_queued": 0.0}, a["assigned_work"])
	require.NotNil(t, a["running_workflows"])
	require.Equal(t, "http://temporal-ui.test:8233/namespaces/default/workflows?query=TaskQueue%3D%22site%3Aadmin-e2e%22", a["temporal_ui_url"])
	require.Equal(t, 0.0, empty["total_devices"])
	require.Equal(t, 0.0, empty["online_devices"])
	require.Equal(t, 0.0, empty["connected_agents"])

	// Logs: `cairn serve` writes its JSON lines to <data-dir>/logs as well
	// as stderr, and the route reads them back.
	srcs := eng.call(t, "GET", "/api/server/logs", token, nil)
	require.Equal(t, true, srcs["enabled"])
	names := []string{}
	for _, s := range srcs["sources"].([]any) {
		names = append(names, s.(map[string]any)["name"].(string))
	}
	require.Contains(t, names, "engine")
	entries := eng.call(t, "GET", "/api/server/logs/engine?limit=1000", token, nil)["entries"].([]any)
	require.NotEmpty(t, entries)
	fi, err := os.Stat(filepath.Join(tmp, "data", "logs", "engine.log"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	// The operator's password and session token never reach the file.
	raw, err := os.ReadFile(filepath.Join(tmp, "data", "logs", "engine.log"))
	require.NoError(t, err)
	require.NotContains(t, string(raw), token)
	for _, secret := range []string{"e2e test password", "e2e test passphrase"} {
		require.NotContains(t, string(raw), secret)
	}

	// Service actions: the edge certificate is read again (unchanged),
	// the site worker restarts and the agent comes back to it.
	outcome := func(wid string) map[string]any {
		var last map[string]any
		require.True(t, assertEventually(90*time.Second, func() bool {
			last = eng.call(t, "GET", "/api/server/service-actions/"+wid, token, nil)
			return last["status"] != "running"
		}), "action %s still running", wid)
		return last
	}
	r := eng.post(t, "/api/server/services/edge/action", token, map[string]any{"action": "reload_certificate"})
	got := outcome(r["workflow_id"].(string))
	require.Equal(t, "succeeded", got["status"], got)
	cert := got["result"].(map[string]any)["certificate"].(map[string]any)
	require.Equal(t, cert["before"].(map[string]any)["fingerprint"], cert["after"].(map[string]any)["fingerprint"])
	require.NotEmpty(t, cert["after"].(map[string]any)["fingerprint"])

	// The Engine queue's newest workflows list it, with a link into the
	// Temporal UI.
	var recent []any
	require.True(t, assertEventually(60*time.Second, func() bool {
		engine := eng.call(t, "GET", "/api/server/workers", token, nil)["engine"].(map[string]any)
		recent = engine["recent_workflow_runs"].([]any)
		for _, w := range recent {
			m := w.(map[string]any)
			if m["type"] == "ServiceAction" && m["workflow_id"] == r["workflow_id"] {
				return strings.HasPrefix(m["temporal_ui_url"].(string), "http://temporal-ui.test:8233/namespaces/default/workflows/service-action")
			}
		}
		return false
	}), "recent workflows: %v", recent)

	r = eng.post(t, "/api/server/services/worker:site:admin-e2e/action", token, map[string]any{"action": "restart"})
	got = outcome(r["workflow_id"].(string))
	require.Equal(t, "succeeded", got["status"], got)
	eng.waitStatus(t, token, ag, "Connected", 120*time.Second)
	require.True(t, assertEventually(60*time.Second, func() bool { return bySlug()["admin-e2e"]["connected_agents"] == 1.0 }))

	// The Engine's own restart: it answers, then stops gracefully (exit
	// status 0) for its supervisor to start it again.
	r = eng.post(t, "/api/server/services/engine/restart", token, nil)
	require.Equal(t, "queued", r["status"])
	require.Equal(t, "systemd", r["supervisor"])
	done := make(chan error, 1)
	go func() { done <- eng.cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "output:\n%s", eng.out)
	case <-time.After(90 * time.Second):
		t.Fatalf("the Engine did not stop after its restart was asked; output:\n%s", eng.out)
	}
}
