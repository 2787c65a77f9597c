package api_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Service actions (issue 26): queued as ServiceAction workflows whose
// outcome the actions routes show; bad keys and actions are
// validation_failed; the Engine's own restart answers no_supervisor when
// nothing would start it again.
func TestServerServiceActions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	op := f.operator(t, "services-operator")
	slug := uniqueSlug("svc")
	require.Equal(t, 201, f.do(t, "POST", "/api/sites", admin, map[string]any{"name": "Services", "site_worker_slug": slug}).Status)
	queue := "site:" + slug
	require.Eventually(t, func() bool { return f.engine.mgr.Has(queue) }, 30*time.Second, 50*time.Millisecond)
	before, ok := f.engine.mgr.Status(queue)
	require.True(t, ok)

	// Waits as long as an action may take (a site worker's restart is
	// bounded at 5 minutes by its workflow): on a loaded machine the
	// restarted worker's first poll and the retried check that it serves
	// took over a minute (fresh-clone CI, 2026-11-29).
	outcome := func(wid string) map[string]any {
		var last map[string]any
		require.Eventually(t, func() bool {
			r := f.do(t, "GET", "/api/server/service-actions/"+wid, admin, nil)
			require.Equal(t, 200, r.Status, r.Raw)
			last = r.Body
			return r.Body["status"] != "running"
		}, 5*time.Minute, 100*time.Millisecond)
		return last
	}

	// Restart the site worker: it stops, starts again, and answers.
	r := f.do(t, "POST", "/api/server/services/worker:site:"+slug+"/action", admin, map[string]any{"action": "restart"})
	require.Equal(t, 202, r.Status, r.Raw)
	require.Equal(t, "running", r.Body["status"])
	wid := r.Body["workflow_id"].(string)
	got := outcome(wid)
	require.Equal(t, "succeeded", got["status"], got)
	res := got["result"].(map[string]any)
	require.Contains(t, res["detail"], "restarted in")
	// The new worker answered the workflow's last step: it runs.
	after, ok := f.engine.mgr.Status(queue)
	require.True(t, ok, "the worker is running again once the action succeeded")
	require.True(t, after.Since.After(before.Since), "the worker started again")
	require.Equal(t, "running", after.State)
	require.Equal(t, after.Since.UTC().Format(time.RFC3339Nano), res["serving"].(map[string]any)["started_at"])

	// /restart of a site worker is the same action (the key's colons
	// percent-encoded, as the console sends them).
	r = f.do(t, "POST", "/api/server/services/worker%3Asite%3A"+slug+"/restart", admin, nil)
	require.Equal(t, 202, r.Status, r.Raw)
	require.Equal(t, "succeeded", outcome(r.Body["action"].(map[string]any)["workflow_id"].(string))["status"])

	// No HTTPS in this Engine: the reload fails, and says why.
	r = f.do(t, "POST", "/api/server/services/edge/action", admin, map[string]any{"action": "reload_certificate"})
	require.Equal(t, 202, r.Status, r.Raw)
	got = outcome(r.Body["workflow_id"].(string))
	require.Equal(t, "failed", got["status"])
	require.Contains(t, got["error"], "HTTPS is off")

	r = f.do(t, "POST", "/api/server/services/tunnels/action", admin, map[string]any{"action": "reconcile_tunnels"})
	require.Equal(t, 202, r.Status, r.Raw)
	got = outcome(r.Body["workflow_id"].(string))
	require.Equal(t, "succeeded", got["status"])
	require.Equal(t, "no active tunnel to reconcile", got["result"].(map[string]any)["detail"])

	require.Eventually(t, func() bool { // visibility is eventually consistent
		list := f.do(t, "GET", "/api/server/service-actions", admin, nil)
		require.Equal(t, 200, list.Status, list.Raw)
		for _, a := range list.Body["actions"].([]any) {
			if a.(map[string]any)["workflow_id"] == wid {
				return a.(map[string]any)["status"] == "succeeded"
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "the restart is listed with its outcome")

	// The Engine itself: no supervisor runs it here.
	r = f.do(t, "POST", "/api/server/services/engine/restart", admin, nil)
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "no_supervisor", r.Body["error"])

	for _, c := range []struct {
		path   string
		body   any
		field  string
		status int
	}{
		{"/api/server/services/postgresql/action", map[string]any{"action": "restart"}, "service_key", 400},
		{"/api/server/services/engine/action", map[string]any{"action": "restart"}, "service_key", 400},
		{"/api/server/services/worker:site:no-such-site/action", map[string]any{"action": "restart"}, "service_key", 400},
		{"/api/server/services/edge/action", map[string]any{"action": "restart"}, "action", 400},
		{"/api/server/services/tunnels/action", map[string]any{"action": "explode"}, "action", 400},
		{"/api/server/services/edge/restart", nil, "service_key", 400},
	} {
		r := f.do(t, "POST", c.path, admin, c.body)
		require.Equal(t, c.status, r.Status, c.path+" "+r.Raw)
		require.NotEmpty(t, r.field(c.field), c.path+" "+r.Raw)
	}
	require.Equal(t, 404, f.do(t, "GET", "/api/server/service-actions/not-an-action", admin, nil).Status)
	require.Equal(t, 403, f.do(t, "POST", "/api/server/services/tunnels/action", op, map[string]any{"action": "reconcile_tunnels"}).Status)
	require.Equal(t, 403, f.do(t, "POST", "/api/server/services/engine/restart", op, nil).Status)
	require.Equal(t, 403, f.do(t, "GET", "/api/server/service-actions", op, nil).Status)
}
