package api_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Onboarding redeploy (issue 27 item 6): the job answers its one-time
// code once; the device's own key enrolls with it at once (same GUID),
// and the job's workflow ends it enrolled. Refusals change nothing: bad
// input, another site's device (404), a quarantined device, a second open
// job. A job is canceled (its code then enrolls nothing) and retried.
func TestOnboardingRedeploy(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	a := f.enrolled(t, fl.admin, fl.siteA, "redeploy-01")

	r := f.do(t, "POST", "/api/onboarding/jobs", fl.admin, map[string]any{"device_guid": a.guid, "reason": "stale agent"})
	require.Equal(t, 202, r.Status, r.Raw)
	job, code := r.Body["id"].(string), r.Body["enrollment_code"].(string)
	require.NotEmpty(t, code)
	require.Equal(t, float64(fl.siteA), r.Body["site_id"])
	require.Equal(t, "stale agent", r.Body["reason"])
	got := f.do(t, "GET", "/api/onboarding/jobs/"+job, fl.admin, nil)
	require.Equal(t, 200, got.Status, got.Raw)
	require.NotContains(t, got.Raw, code, "the code is answered once")

	again := f.do(t, "POST", "/api/onboarding/jobs", fl.admin, map[string]any{"device_guid": a.guid})
	require.Equal(t, 409, again.Status, again.Raw)
	require.Equal(t, "onboarding_job_open", again.Body["error"])

	// The agent (not connected here, so the job waits for a manual
	// install) enrolls with the code under its own key: approved at once.
	e := a.request(t, code)
	require.Equal(t, 202, e.Status, e.Raw)
	require.Equal(t, proto.ApprovalApproved, e.Body["status"], e.Raw)
	guid := a.guid
	p := a.poll(t)
	require.Equal(t, 200, p.Status, p.Raw)
	require.Equal(t, guid, a.guid, "the same device")
	var last response
	require.Eventually(t, func() bool {
		last = f.do(t, "GET", "/api/onboarding/jobs/"+job, fl.admin, nil)
		return last.Body["status"] == "enrolled"
	}, 2*time.Minute, 250*time.Millisecond)
	require.NotNil(t, last.Body["finished_at"])
	list := f.do(t, "GET", "/api/onboarding/jobs?device_guid="+guid, fl.admin, nil)
	require.Equal(t, 200, list.Status, list.Raw)
	require.Len(t, list.Body["jobs"], 1)
	retry := f.do(t, "POST", "/api/onboarding/jobs/"+job+"/retry", fl.admin, nil)
	require.Equal(t, 409, retry.Status, "an enrolled job is not retried: %s", retry.Raw)
	require.Equal(t, "onboarding_job_finished", retry.Body["error"])

	// Another key with the code waits for an operator, like any code.
	other := f.newAgent(t, "intruder")
	r = f.do(t, "POST", "/api/onboarding/jobs", fl.admin, map[string]any{"device_guid": "guid-disc"})
	require.Equal(t, 202, r.Status, r.Raw)
	discJob, discCode := r.Body["id"].(string), r.Body["enrollment_code"].(string)
	e = other.request(t, discCode)
	require.Equal(t, 202, e.Status, e.Raw)
	require.Equal(t, proto.ApprovalPending, e.Body["status"], "only the device's own key is in at once")

	// Cancel: the job ends canceled and its code enrolls nothing more.
	r = f.do(t, "POST", "/api/onboarding/jobs/"+discJob+"/cancel", fl.admin, nil)
	require.Equal(t, 202, r.Status, r.Raw)
	require.Eventually(t, func() bool {
		last = f.do(t, "GET", "/api/onboarding/jobs/"+discJob, fl.admin, nil)
		return last.Body["status"] == "canceled"
	}, time.Minute, 250*time.Millisecond)
	r = f.do(t, "POST", "/api/onboarding/jobs/"+discJob+"/cancel", fl.admin, nil)
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "onboarding_job_finished", r.Body["error"])
	late := f.newAgent(t, "late")
	e = late.request(t, discCode)
	require.Equal(t, 400, e.Status, "a canceled job's code is spent: %s", e.Raw)

	// Retry: a new job, a new code, naming the old one.
	r = f.do(t, "POST", "/api/onboarding/jobs/"+discJob+"/retry", fl.admin, nil)
	require.Equal(t, 202, r.Status, r.Raw)
	require.Equal(t, discJob, r.Body["retry_of"])
	require.NotEqual(t, discCode, r.Body["enrollment_code"])
	require.NotEqual(t, discJob, r.Body["id"])

	// Refusals.
	op := f.scopedOperatorOf(t, fl.admin, "onb-op", fl.siteA)
	for _, c := range []struct {
		name   string
		body   map[string]any
		status int
		code   string
		field  string
	}{
		{"no device", map[string]any{}, 400, "validation_failed", "device_guid"},
		{"too short", map[string]any{"device_guid": "guid-conn", "expires_in_seconds": 10}, 400, "validation_failed", "expires_in_seconds"},
		{"unknown site", map[string]any{"device_guid": "guid-conn", "site_id": 99999}, 400, "validation_failed", "site_id"},
		{"site out of scope", map[string]any{"device_guid": "guid-conn", "site_id": fl.siteB}, 400, "validation_failed", "site_id"},
		{"device out of scope", map[string]any{"device_guid": "guid-off"}, 404, "not_found", ""},
		{"unknown device", map[string]any{"device_guid": "nope"}, 404, "not_found", ""},
	} {
		r := f.do(t, "POST", "/api/onboarding/jobs", op, c.body)
		require.Equal(t, c.status, r.Status, "%s: %s", c.name, r.Raw)
		require.Equal(t, c.code, r.Body["error"], c.name)
		if c.field != "" {
			require.NotEmpty(t, r.field(c.field), "%s: %s", c.name, r.Raw)
		}
	}
	// A scoped operator does not see another site's jobs.
	r = f.do(t, "POST", "/api/onboarding/jobs", fl.admin, map[string]any{"device_guid": "guid-off"})
	require.Equal(t, 202, r.Status, r.Raw)
	offJob := r.Body["id"].(string)
	r = f.do(t, "GET", "/api/onboarding/jobs/"+offJob, op, nil)
	require.Equal(t, 404, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/onboarding/jobs/"+offJob+"/cancel", op, nil)
	require.Equal(t, 404, r.Status, r.Raw)
	list = f.do(t, "GET", "/api/onboarding/jobs", op, nil)
	for _, j := range list.Body["jobs"].([]any) {
		require.NotEqual(t, offJob, j.(map[string]any)["id"])
	}

	// Quarantine: no redeploy lets a quarantined device back in.
	r = f.do(t, "POST", "/api/devices/guid-conn/quarantine", fl.admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/onboarding/jobs", fl.admin, map[string]any{"device_guid": "guid-conn"})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "onboarding_device_not_active", r.Body["error"])
}
