package api_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// saveFilter saves a device filter whose hostname starts with prefix.
func (f *fixture) saveFilter(t *testing.T, token, name, prefix string) int64 {
	t.Helper()
	r := f.do(t, "POST", "/api/device_filters", token, map[string]any{"name": name, "filter": map[string]any{"match": "all",
		"conditions": []any{map[string]any{"field": "hostname", "op": "starts_with", "value": prefix}}}})
	require.Equal(t, 201, r.Status, r.Raw)
	return int64(r.Body["id"].(float64))
}

// resolvedHosts is what job id's targets resolve to now, as the fire does.
func (f *fixture) resolvedHosts(t *testing.T, id int64) []string {
	t.Helper()
	jobs := f.engine.core.Jobs
	job, err := jobs.GetSystem(context.Background(), id)
	require.NoError(t, err)
	res, err := jobs.Resolve(context.Background(), job)
	require.NoError(t, err)
	var out []string
	for _, d := range res.Targets {
		out = append(out, d.Hostname)
	}
	sort.Strings(out)
	return out
}

// A job aimed at a saved filter runs on exactly the devices the filter
// matches when it fires: one that starts matching after the job was
// saved is included, one that does not match is not.
func TestJobFilterTargetFiresOnMatchingDevices(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "jft")
	agent := f.scriptAgent(t, admin, site, "web-01")
	f.addDevice(t, "guid-db-01", "db-01", site, deviceState{seen: ago(time.Second)})
	filter := f.saveFilter(t, admin, "Web servers", "web-")
	asm := f.testAssembly(t, admin, "touch", "script")

	r := f.do(t, "POST", "/api/scheduled_jobs", admin, map[string]any{"name": "web job", "kind": "script", "assembly_id": asm,
		"targets": map[string]any{"filters": []int64{filter}}, "schedule": map[string]any{"type": "manual"}})
	require.Equal(t, 201, r.Status, r.Raw)
	require.Equal(t, map[string]any{"devices": []any{}, "sites": []any{}, "filters": []any{float64(filter)}}, r.Body["targets"])
	job := int64(r.Body["id"].(float64))

	// Matches after the save: resolution happens at fire time.
	f.addDevice(t, "guid-web-02", "web-02", site, deviceState{seen: ago(time.Second)})

	r = f.do(t, "POST", fmt.Sprintf("/api/scheduled_jobs/%d/rerun", job), admin, nil)
	require.Equal(t, 202, r.Status, r.Raw)
	runID := r.Body["run_id"].(string)
	var detail response
	require.Eventually(t, func() bool {
		detail = f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d/runs/%s", job, runID), admin, nil)
		if detail.Status != 200 {
			return false
		}
		for _, x := range detail.Body["results"].([]any) {
			if x.(map[string]any)["hostname"] == "web-01" && x.(map[string]any)["status"] == "succeeded" {
				return true
			}
		}
		return false
	}, 90*time.Second, 250*time.Millisecond, "the matching agent never ran the job")
	hosts := hostnames(t, detail, "results")
	require.Equal(t, []string{"web-01", "web-02"}, hosts)
	require.NotEmpty(t, agent.guid)
}

// A site-limited operator's filter job reaches only the sites the
// operator had when saving it, even after gaining more; the job is
// visible only to operators covering those sites; an admin's save lifts
// the limit (and hides it from every site-limited operator).
func TestJobFilterTargetScope(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	f.addDevice(t, "guid-pc-a", "pc-a", fl.siteA, deviceState{seen: ago(time.Second)})
	f.addDevice(t, "guid-pc-b", "pc-b", fl.siteB, deviceState{seen: ago(time.Second)})
	filter := f.saveFilter(t, fl.admin, "PCs", "pc-")
	asm := f.testAssembly(t, fl.admin, "check", "script")
	opA := f.scopedOperatorOf(t, fl.admin, "ops-a", fl.siteA)
	opB := f.scopedOperatorOf(t, fl.admin, "ops-b", fl.siteB)

	body := jobBody(asm, map[string]any{"type": "manual"}, map[string]any{"filters": []int64{filter}})
	r := f.do(t, "POST", "/api/scheduled_jobs", opA, body)
	require.Equal(t, 201, r.Status, r.Raw)
	job := int64(r.Body["id"].(float64))
	require.Equal(t, []string{"pc-a"}, f.resolvedHosts(t, job))

	// Gaining site B later does not widen the saved job.
	r = f.do(t, "POST", "/api/user_site_assignments/assign", fl.admin, map[string]any{"usernames": []string{"ops-a"},
		"site_ids": []int64{fl.siteA, fl.siteB}})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, []string{"pc-a"}, f.resolvedHosts(t, job))

	// Visible to whoever covers site A; like absent to the site-B operator.
	path := fmt.Sprintf("/api/scheduled_jobs/%d", job)
	require.Equal(t, 200, f.do(t, "GET", path, opA, nil).Status)
	require.Equal(t, 404, f.do(t, "GET", path, opB, nil).Status)
	require.Equal(t, 404, f.do(t, "PUT", path, opB, body).Status)
	require.Empty(t, f.do(t, "GET", "/api/scheduled_jobs", opB, nil).Body["jobs"])

	// Saved again by the now wider operator: both sites.
	r = f.do(t, "PUT", path, opA, body)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, []string{"pc-a", "pc-b"}, f.resolvedHosts(t, job))

	// An admin's save reaches every site, so no site-limited operator
	// may see or change the job any more.
	opA2 := f.scopedOperatorOf(t, fl.admin, "ops-a2", fl.siteA)
	r = f.do(t, "PUT", path, fl.admin, body)
	require.Equal(t, 200, r.Status, r.Raw)
	f.addDevice(t, "guid-pc-c", "pc-c", fl.siteB, deviceState{seen: ago(time.Second)})
	require.Equal(t, []string{"pc-a", "pc-b", "pc-c"}, f.resolvedHosts(t, job))
	require.Equal(t, 404, f.do(t, "GET", path, opA2, nil).Status)
	require.Equal(t, 404, f.do(t, "GET", path, opA, nil).Status, "covers both sites, but the job reaches every site")
}

// A filter a job targets cannot be deleted; once no job does, it can.
// An unknown filter is a validation error naming targets.filters.
func TestJobFilterTargetInUse(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "fiu")
	f.addDevice(t, "guid-fiu-01", "fiu-01", site, deviceState{})
	filter := f.saveFilter(t, admin, "Fiu", "fiu-")
	other := f.saveFilter(t, admin, "Other", "zzz-")
	asm := f.testAssembly(t, admin, "x", "script")
	r := f.do(t, "POST", "/api/scheduled_jobs", admin, jobBody(asm, map[string]any{"type": "manual"},
		map[string]any{"filters": []int64{filter, other}}))
	require.Equal(t, 201, r.Status, r.Raw)
	job := int64(r.Body["id"].(float64))

	r = f.do(t, "DELETE", fmt.Sprintf("/api/device_filters/%d", filter), admin, nil)
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "filter_in_use", r.Body["error"])

	// Dropping one filter from the job frees it; the other stays held.
	r = f.do(t, "PUT", fmt.Sprintf("/api/scheduled_jobs/%d", job), admin, jobBody(asm, map[string]any{"type": "manual"},
		map[string]any{"filters": []int64{filter}}))
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, 204, f.do(t, "DELETE", fmt.Sprintf("/api/device_filters/%d", other), admin, nil).Status)
	require.Equal(t, 409, f.do(t, "DELETE", fmt.Sprintf("/api/device_filters/%d", filter), admin, nil).Status)

	r = f.do(t, "POST", "/api/scheduled_jobs", admin, jobBody(asm, map[string]any{"type": "manual"},
		map[string]any{"filters": []int64{other}}))
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("targets.filters"), r.Raw)

	require.Equal(t, 204, f.do(t, "DELETE", fmt.Sprintf("/api/scheduled_jobs/%d", job), admin, nil).Status)
	require.Equal(t, 204, f.do(t, "DELETE", fmt.Sprintf("/api/device_filters/%d", filter), admin, nil).Status)
}

// A quick run may aim at a saved filter: it runs on the matching devices
// inside the caller's scope, and refuses a filter matching none, an
// unknown one, one combined with devices, or one beyond the run cap.
func TestQuickRunFilterTarget(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "qrf")
	f.scriptAgent(t, admin, site, "qrf-01")
	match := f.saveFilter(t, admin, "qrf", "qrf-")
	none := f.saveFilter(t, admin, "none", "nothing-")
	big := f.saveFilter(t, admin, "big", "bulk-")
	for i := range 1001 {
		f.addDevice(t, fmt.Sprintf("guid-bulk-%04d", i), fmt.Sprintf("bulk-%04d", i), site, deviceState{})
	}

	runID := f.quickRun(t, admin, map[string]any{"filter_id": match, "language": "sh", "body": "echo filtered"})
	done := f.finishedRun(t, admin, runID)
	require.Equal(t, "qrf-01", onlyResult(t, done)["hostname"])
	require.Equal(t, "filtered\n", onlyResult(t, done)["stdout"])

	for name, body := range map[string]map[string]any{
		"unknown":      {"filter_id": 999999},
		"matches none": {"filter_id": none},
		"too many":     {"filter_id": big},
		"with devices": {"filter_id": match, "device_guids": []string{"guid-bulk-0000"}},
	} {
		body["language"], body["body"] = "sh", "true"
		r := f.do(t, "POST", "/api/scripts/quick_run", admin, body)
		require.Equal(t, 400, r.Status, "%s: %s", name, r.Raw)
		require.NotEmpty(t, r.field("filter_id"), "%s: %s", name, r.Raw)
	}
	r := f.do(t, "POST", "/api/scripts/quick_run", admin, map[string]any{"filter_id": big, "language": "sh", "body": "true"})
	require.Contains(t, r.Raw, "1001 devices")
}
