package api_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairn-rmm/cairn"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/devices"
)

// Assigning moves every listed device or none.
func TestSitesAssignIsAllOrNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	inSite := func(site int64) []string {
		return hostnames(t, f.do(t, "GET", "/api/devices?site_id="+strconv.FormatInt(site, 10), fl.admin, nil), "devices")
	}
	r := f.do(t, "POST", "/api/sites/assign", fl.admin, map[string]any{"guids": []string{"guid-conn", "guid-nope"}, "site_id": fl.siteB})
	require.Equal(t, 404, r.Status, r.Raw)
	require.Equal(t, []string{"conn-host", "disc-host"}, inSite(fl.siteA), "nothing moved")

	r = f.do(t, "POST", "/api/sites/assign", fl.admin, map[string]any{"guids": []string{"guid-conn"}, "site_id": 999999})
	require.Equal(t, 404, r.Status, r.Raw)

	for name, body := range map[string]map[string]any{
		"no guids":  {"guids": []string{}, "site_id": fl.siteB},
		"blank":     {"guids": []string{""}, "site_id": fl.siteB},
		"too many":  {"guids": make([]string, devices.MaxAssign+1), "site_id": fl.siteB},
		"no site":   {"guids": []string{"guid-conn"}},
		"bad site":  {"guids": []string{"guid-conn"}, "site_id": -1},
		"not array": {"guids": "guid-conn", "site_id": fl.siteB},
	} {
		r := f.do(t, "POST", "/api/sites/assign", fl.admin, body)
		require.Equal(t, 400, r.Status, name)
		require.Equal(t, "validation_failed", r.Body["error"], name)
	}

	r = f.do(t, "POST", "/api/sites/assign", fl.admin, map[string]any{"guids": []string{"guid-disc", "guid-conn", "guid-conn"}, "site_id": fl.siteB})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, []any{"guid-conn", "guid-disc"}, r.Body["assigned"])
	require.Equal(t, float64(fl.siteB), r.Body["site_id"])
	require.Empty(t, inSite(fl.siteA))
	require.Equal(t, []string{"conn-host", "disc-host", "never-host", "off-host"}, inSite(fl.siteB))

	r = f.do(t, "GET", "/api/device/activity/conn-host", fl.admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	act := r.Body["activity"].([]any)[0].(map[string]any)
	require.Equal(t, devices.ActivitySiteAssigned, act["kind"])
	require.Equal(t, "admin", act["actor"])
	require.Equal(t, "beta", act["metadata"].(map[string]any)["site_name"])

	m := f.do(t, "GET", "/api/sites/device_map", fl.admin, nil)
	require.Equal(t, float64(fl.siteB), m.Body["device_map"].(map[string]any)["conn-host"].(map[string]any)["site_id"])
}

func TestSiteAutoApproval(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "auto")
	path := "/api/sites/" + strconv.FormatInt(site, 10) + "/auto-approval"
	listed := func() any {
		r := f.do(t, "GET", "/api/sites", admin, nil)
		for _, s := range r.Body["sites"].([]any) {
			if s.(map[string]any)["site_id"] == float64(site) {
				return s.(map[string]any)["auto_approve_until"]
			}
		}
		t.Fatal("site not listed")
		return nil
	}
	require.Nil(t, listed())

	until := func(r response) time.Time {
		t.Helper()
		require.Equal(t, 200, r.Status, r.Raw)
		require.Equal(t, true, r.Body["enabled"])
		at, err := time.Parse(time.RFC3339, r.Body["auto_approve_until"].(string))
		require.NoError(t, err)
		return at
	}
	// The end lies between the call's start and end plus the duration
	// (the answer has whole seconds): bounds from the calls themselves,
	// not a tolerance a slow machine could exceed.
	enable := func(body map[string]any, d time.Duration, msg string) time.Time {
		t.Helper()
		before := time.Now().Truncate(time.Second)
		at := until(f.do(t, "POST", path, admin, body))
		require.False(t, at.Before(before.Add(d)), "%s: %s", msg, at)
		require.False(t, at.After(time.Now().Add(d)), "%s: %s", msg, at)
		return at
	}
	enable(map[string]any{"enabled": true}, time.Hour, "one hour by default")
	at := enable(map[string]any{"enabled": true, "duration_seconds": 600}, 10*time.Minute, "ten minutes")
	require.Equal(t, at.Format(time.RFC3339), listed())
	at = enable(map[string]any{"enabled": true, "duration_seconds": 86400}, 24*time.Hour, "the cap itself is allowed")

	for name, c := range map[string]struct {
		body  any
		field string
	}{
		"over the cap":    {map[string]any{"enabled": true, "duration_seconds": 86401}, "duration_seconds"},
		"under a minute":  {map[string]any{"enabled": true, "duration_seconds": 59}, "duration_seconds"},
		"huge":            {map[string]any{"enabled": true, "duration_seconds": int64(1) << 62}, "duration_seconds"},
		"enabled missing": {map[string]any{"duration_seconds": 600}, "enabled"},
		"enabled string":  {map[string]any{"enabled": "yes"}, "enabled"},
	} {
		r := f.do(t, "POST", path, admin, c.body)
		require.Equal(t, 400, r.Status, name)
		require.NotEmpty(t, r.field(c.field), name)
	}
	require.Equal(t, at.Format(time.RFC3339), listed(), "a refused change keeps the window")

	r := f.do(t, "POST", path, admin, map[string]any{"enabled": false, "duration_seconds": 0})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, false, r.Body["enabled"])
	require.Nil(t, r.Body["auto_approve_until"])
	require.Nil(t, listed())

	r = f.do(t, "POST", "/api/sites/999999/auto-approval", admin, map[string]any{"enabled": true})
	require.Equal(t, 404, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/sites/abc/auto-approval", admin, map[string]any{"enabled": true})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("site_id"))
}

func TestDeviceActivityRoutes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	ctx := context.Background()
	var ids []int64
	for i := range 3 {
		a, err := f.engine.devices.RecordActivity(ctx, devices.NewActivity{GUID: "guid-conn", Hostname: "conn-host", SiteID: cairn.SiteID(fl.siteA),
			Kind: "device_quarantined", Summary: "step " + strconv.Itoa(i), Actor: "admin", Metadata: map[string]any{"step": i}})
		require.NoError(t, err)
		ids = append(ids, a.ID)
	}
	r := f.do(t, "GET", "/api/device/activity/CONN-HOST?limit=2", fl.admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	page := r.Body["activity"].([]any)
	require.Len(t, page, 2)
	first := page[0].(map[string]any)
	require.Equal(t, float64(ids[2]), first["id"])
	require.Equal(t, "guid-conn", first["guid"])
	require.Equal(t, "conn-host", first["hostname"])
	require.Equal(t, float64(fl.siteA), first["site_id"])
	require.Equal(t, "device_quarantined", first["kind"])
	require.Equal(t, "completed", first["status"])
	require.Equal(t, float64(2), first["metadata"].(map[string]any)["step"])
	require.NotNil(t, first["finished_at"])
	require.Equal(t, float64(ids[1]), r.Body["next_before_id"])

	r = f.do(t, "GET", "/api/device/activity/conn-host?limit=2&before_id="+strconv.FormatInt(ids[1], 10), fl.admin, nil)
	require.Len(t, r.Body["activity"], 1)
	require.Nil(t, r.Body["next_before_id"])

	r = f.do(t, "GET", "/api/device/activity/job/"+strconv.FormatInt(ids[0], 10), fl.admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "step 0", r.Body["summary"])

	r = f.do(t, "GET", "/api/device/activity/disc-host", fl.admin, nil)
	require.Equal(t, 200, r.Status, "a device without history has an empty list: %s", r.Raw)
	require.Equal(t, []any{}, r.Body["activity"])

	for path, field := range map[string]string{
		"/api/device/activity/conn-host?limit=0":           "limit",
		"/api/device/activity/conn-host?limit=201":         "limit",
		"/api/device/activity/conn-host?before_id=-1":      "before_id",
		"/api/device/activity/job/abc":                     "id",
		"/api/device/activity/job/0":                       "id",
		"/api/device/activity/" + strings.Repeat("h", 256): "hostname",
	} {
		r := f.do(t, "GET", path, fl.admin, nil)
		require.Equal(t, 400, r.Status, path)
		require.NotEmpty(t, r.field(field), path)
	}
	require.Equal(t, 404, f.do(t, "GET", "/api/device/activity/job/999999", fl.admin, nil).Status)
	require.Equal(t, 404, f.do(t, "GET", "/api/device/activity/nobody-host", fl.admin, nil).Status)

	r = f.do(t, "DELETE", "/api/device/activity/Conn-Host", fl.admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, float64(3), r.Body["deleted"])
	r = f.do(t, "GET", "/api/device/activity/conn-host", fl.admin, nil)
	require.Empty(t, r.Body["activity"])
	require.Equal(t, 404, f.do(t, "GET", "/api/device/activity/job/"+strconv.FormatInt(ids[0], 10), fl.admin, nil).Status)
	require.Equal(t, 404, f.do(t, "DELETE", "/api/device/activity/nobody-host", fl.admin, nil).Status)
}
