package api_test

import (
	"context"
	"github.com/cairn-rmm/cairn"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/workflows"
)

// Bad bodies are refused with validation_failed and the field, before any
// domain work, so nothing is half applied.
func TestSiteCreateRejectsBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	token := f.admin(t)
	long := strings.Repeat("a", 52)
	cases := []struct {
		name   string
		body   string
		ctype  string
		status int
		code   string
		field  string
	}{
		{"unknown field", `{"name":"A","site_worker_slug":"a","color":"red"}`, "", 400, "validation_failed", "color"},
		{"wrong type", `{"name":"A","site_worker_slug":5}`, "", 400, "validation_failed", "site_worker_slug"},
		{"malformed", `{"name":`, "", 400, "validation_failed", "body"},
		{"trailing data", `{"name":"A","site_worker_slug":"a"} {}`, "", 400, "validation_failed", "body"},
		{"empty body", ``, "", 400, "validation_failed", "body"},
		{"not an object", `[1,2]`, "", 400, "validation_failed", "body"},
		{"empty slug", `{"name":"A","site_worker_slug":""}`, "", 400, "validation_failed", "site_worker_slug"},
		{"slug too long", `{"name":"A","site_worker_slug":"` + long + `"}`, "", 400, "validation_failed", "site_worker_slug"},
		{"slug upper case", `{"name":"A","site_worker_slug":"Main"}`, "", 400, "validation_failed", "site_worker_slug"},
		{"slug with colon", `{"name":"A","site_worker_slug":"a:b"}`, "", 400, "validation_failed", "site_worker_slug"},
		{"missing name", `{"site_worker_slug":"ok"}`, "", 400, "validation_failed", "name"},
		{"name too long", `{"name":"` + strings.Repeat("n", 101) + `","site_worker_slug":"ok"}`, "", 400, "validation_failed", "name"},
		{"not json", `name=A`, "application/x-www-form-urlencoded", 415, "unsupported_media_type", ""},
		{"oversized", `{"name":"` + strings.Repeat("x", 1<<20) + `","site_worker_slug":"a"}`, "", 413, "payload_too_large", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", f.url+"/api/sites", strings.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+token)
			if tc.ctype == "" {
				tc.ctype = "application/json"
			}
			req.Header.Set("Content-Type", tc.ctype)
			r := do(t, req)
			require.Equal(t, tc.status, r.Status, r.Raw)
			require.Equal(t, tc.code, r.Body["error"])
			if tc.field != "" {
				require.NotEmpty(t, r.field(tc.field), r.Raw)
			}
		})
	}
	r := f.do(t, "GET", "/api/sites", token, nil)
	require.Empty(t, r.Body["sites"], "no rejected request may create a site")
}

// probe runs the worker-probe workflow on queue and returns who answered.
func probe(t *testing.T, f *fixture, queue string, timeout time.Duration) (activities.WorkerIdentity, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// The Engine's own client: the answer is sealed by its payload codec.
	run, err := f.engine.core.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.WorkerProbeWorkflowID(queue, uniqueSlug("p")), TaskQueue: queue, WorkflowExecutionTimeout: timeout,
	}, workflows.WorkerProbe)
	require.NoError(t, err)
	var id activities.WorkerIdentity
	err = run.Get(ctx, &id)
	return id, err
}

// A site's worker starts when the site is created, follows a slug change
// and stops when the site is deleted, without restarting anything.
func TestSiteLifecycleDrivesItsWorker(t *testing.T) {
	t.Parallel()
	f := setup(t)
	token := f.admin(t)
	slug := uniqueSlug("hq")

	r := f.do(t, "POST", "/api/sites", token, map[string]any{"name": "Head office", "site_worker_slug": slug})
	require.Equal(t, 201, r.Status, r.Raw)
	siteID := r.Body["site_id"]
	require.Equal(t, "site:"+slug, r.Body["site_worker_name"])
	require.Equal(t, "https://cairn.example.test", r.Body["public_base_url"])
	require.Equal(t, "cairn.example.test", r.Body["public_hostname"])

	dup := f.do(t, "POST", "/api/sites", token, map[string]any{"name": "Other", "site_worker_slug": slug})
	require.Equal(t, 409, dup.Status)
	require.NotEmpty(t, dup.field("site_worker_slug"))

	queue := workflows.SiteTaskQueue(slug)
	id, err := probe(t, f, queue, 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, queue, id.TaskQueue)
	require.Contains(t, id.Identity, queue)

	w := f.do(t, "GET", "/api/server/workers?history_seconds=600", token, nil)
	require.Equal(t, 200, w.Status, w.Raw)
	sitesList := w.Body["sites"].([]any)
	require.Len(t, sitesList, 1)
	entry := sitesList[0].(map[string]any)
	require.Equal(t, "running", entry["state"])
	require.Equal(t, true, entry["local"])
	require.NotEmpty(t, entry["pollers"])
	require.EqualValues(t, 0, entry["online_devices"])
	require.EqualValues(t, 0, entry["connected_agents"])
	require.Equal(t, map[string]any{"operations_running": 0.0, "operations_queued": 0.0, "jobs_running": 0.0, "jobs_queued": 0.0}, entry["assigned_work"])
	require.NotNil(t, entry["running_workflows"])
	require.Equal(t, 400, f.do(t, "GET", "/api/server/workers?history_seconds=-1", token, nil).Status)

	renamed := uniqueSlug("main")
	r = f.do(t, "POST", "/api/sites/rename", token, map[string]any{"site_id": siteID, "name": "Main office", "site_worker_slug": renamed})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "Main office", r.Body["name"])
	require.Eventually(t, func() bool { return !f.engine.mgr.Has(queue) }, 20*time.Second, 50*time.Millisecond)
	id, err = probe(t, f, workflows.SiteTaskQueue(renamed), 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, workflows.SiteTaskQueue(renamed), id.TaskQueue)

	r = f.do(t, "POST", "/api/sites/delete", token, map[string]any{"site_ids": []any{siteID}})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Eventually(t, func() bool { return !f.engine.mgr.Has(workflows.SiteTaskQueue(renamed)) }, 20*time.Second, 50*time.Millisecond)
	_, err = probe(t, f, workflows.SiteTaskQueue(renamed), 3*time.Second)
	require.Error(t, err, "nobody may serve a deleted site's queue")
}

func TestSiteDeleteIsAllOrNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	token := f.admin(t)
	a := f.do(t, "POST", "/api/sites", token, map[string]any{"name": "A", "site_worker_slug": uniqueSlug("a")})
	b := f.do(t, "POST", "/api/sites", token, map[string]any{"name": "B", "site_worker_slug": uniqueSlug("b")})
	require.Equal(t, 201, a.Status)
	require.Equal(t, 201, b.Status)
	_, err := f.store.DeviceInsert(context.Background(), db.DeviceInsertParams{Guid: "guid-1", Hostname: "pc-1", SiteID: cairn.SiteID(int64(b.Body["site_id"].(float64)))})
	require.NoError(t, err)

	r := f.do(t, "POST", "/api/sites/delete", token, map[string]any{"site_ids": []any{a.Body["site_id"], b.Body["site_id"]}})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "site_not_empty", r.Body["error"])
	r = f.do(t, "POST", "/api/sites/delete", token, map[string]any{"site_ids": []any{a.Body["site_id"], 999999}})
	require.Equal(t, 404, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/sites/delete", token, map[string]any{"site_ids": []any{}})
	require.Equal(t, 400, r.Status)
	require.NotEmpty(t, r.field("site_ids"))
	require.Len(t, f.do(t, "GET", "/api/sites", token, nil).Body["sites"], 2, "a refused delete removes nothing")

	m := f.do(t, "GET", "/api/sites/device_map", token, nil)
	require.Equal(t, 200, m.Status)
	entry := m.Body["device_map"].(map[string]any)["pc-1"].(map[string]any)
	require.Equal(t, "B", entry["site_name"])

	r = f.do(t, "POST", "/api/sites/rename", token, map[string]any{"site_id": 999999, "name": "X"})
	require.Equal(t, 404, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/sites/rename", token, map[string]any{"site_id": a.Body["site_id"], "name": "A2", "site_worker_slug": b.Body["site_worker_slug"]})
	require.Equal(t, 409, r.Status, r.Raw)
	require.NotEmpty(t, r.field("site_worker_slug"))
}
