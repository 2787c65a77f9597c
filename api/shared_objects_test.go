package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/devices"
)

// sharedBodies are valid create/update bodies of the shared automation
// objects, by collection path.
func sharedBodies(name string, assembly int64) map[string]map[string]any {
	return map[string]map[string]any{
		"/api/assemblies": {"name": name, "kind": "script", "language": "sh", "body": "echo " + name},
		"/api/workflows":  {"name": name, "steps": []any{map[string]any{"assembly_id": assembly}}},
		"/api/device_filters": {"name": name, "filter": map[string]any{"match": "all",
			"conditions": []any{map[string]any{"field": "hostname", "op": "starts_with", "value": name}}}},
	}
}

func (f *fixture) create(t *testing.T, token, path string, body map[string]any) int64 {
	t.Helper()
	r := f.do(t, "POST", path, token, body)
	require.Equal(t, 201, r.Status, r.Raw)
	return int64(r.Body["id"].(float64))
}

// requireDependants checks a dependants_exist refusal naming exactly want
// ("kind:id").
func requireDependants(t *testing.T, r response, want ...string) {
	t.Helper()
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "dependants_exist", r.Body["error"], r.Raw)
	var got []string
	for _, d := range r.Body["dependants"].([]any) {
		m := d.(map[string]any)
		require.NotEmpty(t, m["name"], r.Raw)
		got = append(got, fmt.Sprintf("%s:%v", m["kind"], m["id"]))
	}
	require.ElementsMatch(t, want, got, r.Raw)
}

// A site-limited operator cannot change shared objects an administrator
// saved (they reach every site), nor one of its own that work saved by a
// broader scope uses (409 listing that work); it may change its own
// objects that only its own work uses. Bundled assemblies are read-only
// for everyone.
func TestSharedObjectEditsFollowOwnerAndScope(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	op := f.scopedOperatorOf(t, fl.admin, "shared-op", fl.siteA)
	adminAsm := f.testAssembly(t, fl.admin, "admin script", "script")

	// Administrator's objects: shared with every site.
	for path, body := range sharedBodies("admins", adminAsm) {
		id := f.create(t, fl.admin, path, body)
		one := fmt.Sprintf("%s/%d", path, id)
		got := f.do(t, "GET", one, fl.admin, nil)
		require.Nil(t, got.Body["site_scope"], "%s: an administrator's object reaches every site", path)
		require.NotNil(t, got.Body["owner_user_id"], path)
		edit := sharedBodies("admins-changed", adminAsm)[path]
		r := f.do(t, "PUT", one, op, edit)
		require.Equal(t, 403, r.Status, "%s: %s", path, r.Raw)
		require.Equal(t, "forbidden", r.Body["error"])
		r = f.do(t, "DELETE", one, op, nil)
		require.Equal(t, 403, r.Status, "%s: %s", path, r.Raw)
		require.Equal(t, "admins", f.do(t, "GET", one, fl.admin, nil).Body["name"], "%s: unchanged", path)
		r = f.do(t, "PUT", one, fl.admin, edit)
		require.Equal(t, 200, r.Status, "%s: %s", path, r.Raw)
	}

	// The operator's own objects: scoped to its site, its to change.
	opAsm := f.create(t, op, "/api/assemblies", sharedBodies("op script", 0)["/api/assemblies"])
	got := f.do(t, "GET", fmt.Sprintf("/api/assemblies/%d", opAsm), op, nil)
	require.Equal(t, []any{float64(fl.siteA)}, got.Body["site_scope"])
	ids := map[string]int64{}
	for path, body := range sharedBodies("ops", opAsm) {
		ids[path] = f.create(t, op, path, body)
		r := f.do(t, "PUT", fmt.Sprintf("%s/%d", path, ids[path]), op, sharedBodies("ops-v2", opAsm)[path])
		require.Equal(t, 200, r.Status, "%s: %s", path, r.Raw)
	}
	// Its own job on its own objects does not stop it.
	mine := f.create(t, op, "/api/scheduled_jobs", map[string]any{"name": "op job", "kind": "script", "assembly_id": ids["/api/assemblies"],
		"targets": map[string]any{"sites": []int64{fl.siteA}, "filters": []int64{ids["/api/device_filters"]}}, "schedule": map[string]any{"type": "manual"}})
	for path := range ids {
		r := f.do(t, "PUT", fmt.Sprintf("%s/%d", path, ids[path]), op, sharedBodies("ops-v3", opAsm)[path])
		require.Equal(t, 200, r.Status, "%s: %s", path, r.Raw)
	}

	// An administrator's work on them does.
	script := f.create(t, fl.admin, "/api/scheduled_jobs", map[string]any{"name": "admin job", "kind": "script",
		"assembly_id": ids["/api/assemblies"], "targets": map[string]any{"filters": []int64{ids["/api/device_filters"]}},
		"schedule": map[string]any{"type": "manual"}})
	flowJob := f.create(t, fl.admin, "/api/scheduled_jobs", map[string]any{"name": "admin flow job", "kind": "workflow",
		"workflow_id": ids["/api/workflows"], "targets": map[string]any{"sites": []int64{fl.siteB}}, "schedule": map[string]any{"type": "manual"}})
	adminFlow := f.create(t, fl.admin, "/api/workflows", map[string]any{"name": "admin flow",
		"steps": []any{map[string]any{"assembly_id": ids["/api/assemblies"]}}})
	want := map[string][]string{
		"/api/assemblies":     {fmt.Sprintf("scheduled_job:%d", script), fmt.Sprintf("workflow:%d", adminFlow)},
		"/api/device_filters": {fmt.Sprintf("scheduled_job:%d", script)},
		"/api/workflows":      {fmt.Sprintf("scheduled_job:%d", flowJob)},
	}
	for path, deps := range want {
		one := fmt.Sprintf("%s/%d", path, ids[path])
		requireDependants(t, f.do(t, "PUT", one, op, sharedBodies("ops-hijack", opAsm)[path]), deps...)
		require.Equal(t, "ops-v3", f.do(t, "GET", one, op, nil).Body["name"], "%s: unchanged", path)
		// The administrator may; its save widens the object to every site.
		r := f.do(t, "PUT", one, fl.admin, sharedBodies("ops-v4", opAsm)[path])
		require.Equal(t, 200, r.Status, "%s: %s", path, r.Raw)
		require.Nil(t, r.Body["site_scope"], path)
		r = f.do(t, "PUT", one, op, sharedBodies("ops-v5", opAsm)[path])
		require.Equal(t, 403, r.Status, "%s: once an administrator saved it, it is shared: %s", path, r.Raw)
	}
	_ = mine

	// Bundled assemblies: read-only, even for administrators.
	list := f.do(t, "GET", "/api/assemblies", fl.admin, nil)
	var bundled float64
	for _, a := range list.Body["assemblies"].([]any) {
		if m := a.(map[string]any); m["bundled"] == true {
			bundled = m["id"].(float64)
		}
	}
	require.NotZero(t, bundled, list.Raw)
	for _, token := range []string{fl.admin, op} {
		r := f.do(t, "PUT", fmt.Sprintf("/api/assemblies/%v", bundled), token, map[string]any{"name": "mine now", "kind": "script",
			"language": "powershell", "body": "Write-Output hijacked"})
		require.Equal(t, 409, r.Status, r.Raw)
		require.Equal(t, "bundled_read_only", r.Body["error"])
	}
}

// A flow step runs the assembly version it was saved with: an
// administrator's scheduled flow keeps running version 1 after the
// assembly changes, a quick run may name a version (and its hash), and a
// pinned version whose body hash no longer matches is refused rather than
// run.
func TestScheduledFlowRunsPinnedVersion(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "pinned")
	a := f.scriptAgent(t, admin, site, "pinned-01")
	r := f.do(t, "POST", "/api/assemblies", admin, map[string]any{"name": "pinned", "kind": "script", "language": "sh", "body": "echo one"})
	require.Equal(t, 201, r.Status, r.Raw)
	asm := int64(r.Body["id"].(float64))
	v1 := r.Body["body_sha256"].(string)

	r = f.do(t, "POST", "/api/workflows", admin, map[string]any{"name": "pinned flow", "steps": []any{map[string]any{"assembly_id": asm}}})
	require.Equal(t, 201, r.Status, r.Raw)
	flow := int64(r.Body["id"].(float64))
	step := r.Body["steps"].([]any)[0].(map[string]any)
	require.Equal(t, 1.0, step["assembly_version"])
	require.Equal(t, v1, step["assembly_sha256"])
	r = f.do(t, "POST", "/api/scheduled_jobs", admin, map[string]any{"name": "yearly pinned flow", "kind": "workflow", "workflow_id": flow,
		"targets": map[string]any{"devices": []string{a.guid}}, "schedule": map[string]any{"type": "cron", "expression": "0 0 1 1 *"}})
	require.Equal(t, 201, r.Status, r.Raw)
	job := int64(r.Body["id"].(float64))

	// The assembly changes after the flow was saved.
	r = f.do(t, "PUT", fmt.Sprintf("/api/assemblies/%d", asm), admin, map[string]any{"name": "pinned", "kind": "script", "language": "sh", "body": "echo two"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, 2.0, r.Body["version"])

	ctx := context.Background()
	fire := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, temporalClient.ScheduleClient().GetHandle(ctx, f.jobScheduler().ScheduleID(job)).Backfill(ctx,
		client.ScheduleBackfillOptions{Backfill: []client.ScheduleBackfill{{Start: fire.Add(-time.Minute), End: fire.Add(time.Minute),
			Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL}}}))
	var runs []any
	require.Eventually(t, func() bool {
		runs = f.do(t, "GET", fmt.Sprintf("/api/workflows/%d/runs", flow), admin, nil).Body["runs"].([]any)
		return len(runs) == 1 && (runs[0].(map[string]any)["status"] == "succeeded" || runs[0].(map[string]any)["status"] == "failed")
	}, 2*time.Minute, 250*time.Millisecond)
	run := runs[0].(map[string]any)
	require.Equal(t, "succeeded", run["status"], run)
	stepRun := run["steps"].([]any)[0].(map[string]any)["run_id"].(string)
	q := f.do(t, "GET", "/api/scripts/quick_run/"+stepRun, admin, nil)
	require.Equal(t, 200, q.Status, q.Raw)
	require.Equal(t, 1.0, q.Body["assembly_version"], q.Raw)
	require.Equal(t, "one\n", onlyResult(t, q)["stdout"], "the flow runs the version it was saved with")

	// A quick run may name the version it reviewed; a hash that is not
	// that version's is refused.
	q = f.finishedRun(t, admin, f.quickRun(t, admin, map[string]any{"device_guids": []string{a.guid}, "assembly_id": asm,
		"assembly_version": 1, "assembly_sha256": v1}))
	require.Equal(t, "one\n", onlyResult(t, q)["stdout"])
	r = f.do(t, "POST", "/api/scripts/quick_run", admin, map[string]any{"device_guids": []string{a.guid}, "assembly_id": asm,
		"assembly_version": 2, "assembly_sha256": v1})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "assembly_changed", r.Body["error"])

	// Saving a step with a hash that is not its version's is refused.
	r = f.do(t, "PUT", fmt.Sprintf("/api/workflows/%d", flow), admin, map[string]any{"name": "pinned flow",
		"steps": []any{map[string]any{"assembly_id": asm, "assembly_version": 2, "assembly_sha256": v1}}})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("steps[0].assembly_sha256"))
	r = f.do(t, "PUT", fmt.Sprintf("/api/workflows/%d", flow), admin, map[string]any{"name": "pinned flow",
		"steps": []any{map[string]any{"assembly_id": asm, "assembly_version": 9}}})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("steps[0].assembly_version"))

	// A run whose recorded hash does not match the version's body is
	// refused before anything is signed or sent.
	_, err := f.engine.core.Automation.CreateRun(ctx, automation.RunSpec{AssemblyID: &asm, AssemblyVersion: 1,
		AssemblySHA256: strings.Repeat("0", 64), RequestedBy: "admin",
		Targets: []devices.OperationTarget{{GUID: cairn.DeviceGUID(a.guid), Hostname: "pinned-01", SiteID: cairn.SiteID(site)}}})
	require.Equal(t, cairn.ECodeAssemblyChanged, cairn.ErrorCode(err), err)
}
