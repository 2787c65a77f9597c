package api_test

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func hostnameList(t *testing.T, r response, key string) []string {
	t.Helper()
	require.Equal(t, 200, r.Status, r.Raw)
	out := []string{}
	for _, d := range r.Body[key].([]any) {
		out = append(out, d.(map[string]any)["hostname"].(string))
	}
	return out
}

func TestDeviceFilterCRUDSearchAndInUse(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	tree := map[string]any{"match": "all", "conditions": []any{map[string]any{"field": "status", "op": "is", "value": "offline"}}}
	c := f.do(t, "POST", "/api/device_filters", admin, map[string]any{"name": "Offline boxes", "description": "  gone  ", "filter": tree})
	require.Equal(t, 201, c.Status, c.Raw)
	keys := []string{}
	for k := range c.Body {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	require.Equal(t, []string{"created_at", "created_by", "description", "filter", "id", "name", "owner_user_id", "site_scope", "updated_at", "updated_by"}, keys)
	require.Equal(t, "gone", c.Body["description"])
	require.Equal(t, map[string]any{"match": "all", "conditions": []any{map[string]any{"field": "status", "op": "is", "value": "Offline"}}},
		c.Body["filter"], "stored canonical")
	id := strconv.FormatInt(int64(c.Body["id"].(float64)), 10)

	dup := f.do(t, "POST", "/api/device_filters", admin, map[string]any{"name": "OFFLINE BOXES", "filter": tree})
	require.Equal(t, 409, dup.Status, dup.Raw)
	require.Equal(t, "conflict", dup.Body["error"])
	other := f.do(t, "POST", "/api/device_filters", admin, map[string]any{"name": "Linux", "filter": map[string]any{"match": "any",
		"conditions": []any{map[string]any{"field": "os", "op": "contains", "value": "linux"}}}})
	require.Equal(t, 201, other.Status, other.Raw)

	for body, field := range map[string]string{
		`{"name":"x","filter":{"match":"all","conditions":[{"field":"hostname","op":"gt","value":1}]}}`:                            "filter.conditions[0].op",
		`{"name":"x","filter":{"match":"all","conditions":[{"match":"any","conditions":[{"field":"nope","op":"is","value":1}]}]}}`: "filter.conditions[0].conditions[0].field",
		`{"name":"x","filter":{"match":"all","conditions":[{"field":"ip_address","op":"in_cidr","value":"300.1.1.1"}]}}`:           "filter.conditions[0].value",
		`{"name":"x","filter":{"match":"all","conditions":[{"field":"metadata","key":900,"op":"equals","value":"a"}]}}`:            "filter.conditions[0].key",
		`{"name":"","filter":{"match":"all","conditions":[{"field":"hostname","op":"is_empty"}]}}`:                                 "name",
		`{"name":"x"}`: "filter",
	} {
		r := f.do(t, "POST", "/api/device_filters", admin, body)
		require.Equal(t, 400, r.Status, body)
		require.Equal(t, "validation_failed", r.Body["error"])
		require.NotEmpty(t, r.field(field), "%s: %s", body, r.Raw)
	}

	u := f.do(t, "PUT", "/api/device_filters/"+id, admin, map[string]any{"name": "Offline", "filter": tree})
	require.Equal(t, 200, u.Status, u.Raw)
	require.Equal(t, "Offline", u.Body["name"])
	require.Equal(t, "", u.Body["description"])
	require.Equal(t, "Offline", f.do(t, "GET", "/api/device_filters/"+id, admin, nil).Body["name"])
	require.Equal(t, 409, f.do(t, "PUT", "/api/device_filters/"+id, admin, map[string]any{"name": "linux", "filter": tree}).Status)
	require.Equal(t, 404, f.do(t, "PUT", "/api/device_filters/999999", admin, map[string]any{"name": "Z", "filter": tree}).Status)
	require.Equal(t, 404, f.do(t, "GET", "/api/device_filters/abc", admin, nil).Status)

	require.Equal(t, []string{"Linux", "Offline"}, names(t, f.do(t, "GET", "/api/device_filters", admin, nil), "filters"))
	require.Equal(t, []string{"Offline"}, names(t, f.do(t, "GET", "/api/device_filters/search?q=FLIN", admin, nil), "filters"))
	require.Equal(t, []string{"Linux", "Offline"}, names(t, f.do(t, "GET", "/api/device_filters/search?q=n", admin, nil), "filters"))
	require.Equal(t, []string{"Linux"}, names(t, f.do(t, "GET", "/api/device_filters/search?q=n&limit=1", admin, nil), "filters"))
	require.Equal(t, 400, f.do(t, "GET", "/api/device_filters/search?q=n&limit=101", admin, nil).Status)

	// A scheduled job targeting the filter keeps it.
	_, err := f.store.Pool.Exec(context.Background(), `INSERT INTO scheduled_jobs (name, kind, targets) VALUES ('j', 'script', jsonb_build_object('filters', jsonb_build_array($1::bigint)))`, id)
	require.NoError(t, err)
	inUse := f.do(t, "DELETE", "/api/device_filters/"+id, admin, nil)
	require.Equal(t, 409, inUse.Status, inUse.Raw)
	require.Equal(t, "filter_in_use", inUse.Body["error"])
	otherID := strconv.FormatInt(int64(other.Body["id"].(float64)), 10)
	require.Equal(t, 204, f.do(t, "DELETE", "/api/device_filters/"+otherID, admin, nil).Status)
	require.Equal(t, 404, f.do(t, "GET", "/api/device_filters/"+otherID, admin, nil).Status)
	require.Equal(t, 404, f.do(t, "DELETE", "/api/device_filters/"+otherID, admin, nil).Status)
}

func names(t *testing.T, r response, key string) []string {
	t.Helper()
	require.Equal(t, 200, r.Status, r.Raw)
	out := []string{}
	for _, d := range r.Body[key].([]any) {
		out = append(out, d.(map[string]any)["name"].(string))
	}
	return out
}

// An operator limited to site A never sees site B's devices through a
// preview, the paged list or a saved filter; the admin does.
func TestDeviceFiltersRespectScope(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	op := f.scopedOperator(t, fl, "scoped-filters")
	everything := map[string]any{"match": "all", "conditions": []any{map[string]any{"field": "hostname", "op": "is_not_empty"}}}
	siteB := map[string]any{"match": "all", "conditions": []any{map[string]any{"field": "site", "op": "in", "value": []int64{fl.siteB}}}}

	p := f.do(t, "POST", "/api/device_filters/preview", op, map[string]any{"filter": everything})
	require.Equal(t, []string{"conn-host", "disc-host"}, hostnameList(t, p, "devices"))
	require.Equal(t, float64(2), p.Body["total"])
	p = f.do(t, "POST", "/api/device_filters/preview", op, map[string]any{"filter": siteB})
	require.Empty(t, hostnameList(t, p, "devices"))
	require.Equal(t, float64(0), p.Body["total"])
	p = f.do(t, "POST", "/api/device_filters/preview", fl.admin, map[string]any{"filter": everything, "limit": 3})
	require.Equal(t, []string{"conn-host", "disc-host", "never-host"}, hostnameList(t, p, "devices"))
	require.Equal(t, float64(4), p.Body["total"])
	bad := f.do(t, "POST", "/api/device_filters/preview", op, map[string]any{"filter": everything, "limit": 101})
	require.Equal(t, 400, bad.Status)
	require.NotEmpty(t, bad.field("limit"))

	saved := f.do(t, "POST", "/api/device_filters", fl.admin, map[string]any{"name": "Site B", "filter": siteB})
	require.Equal(t, 201, saved.Status, saved.Raw)
	id := strconv.FormatInt(int64(saved.Body["id"].(float64)), 10)
	require.Empty(t, hostnameList(t, f.do(t, "GET", "/api/devices?filter_id="+id, op, nil), "devices"))
	require.Equal(t, []string{"never-host", "off-host"}, hostnameList(t, f.do(t, "GET", "/api/devices?filter_id="+id, fl.admin, nil), "devices"))
	// Filters are shared objects: the operator reads the definition, but
	// its evaluation stays in scope.
	require.Equal(t, 200, f.do(t, "GET", "/api/device_filters/"+id, op, nil).Status)

	md := f.do(t, "GET", "/api/device_filters/metadata", op, nil)
	require.Equal(t, 200, md.Status, md.Raw)
	sites := md.Body["sites"].([]any)
	require.Len(t, sites, 1)
	require.Equal(t, float64(fl.siteA), sites[0].(map[string]any)["id"])
}

// GET /api/devices pages, sorts and narrows by a saved filter, a draft
// filter and the drilldowns together.
func TestDeviceListPagesSortsAndFilters(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	r := f.do(t, "GET", "/api/devices?limit=1&offset=1&sort=-hostname", fl.admin, nil)
	require.Equal(t, []string{"never-host"}, hostnameList(t, r, "devices"))
	require.Equal(t, float64(4), r.Body["total"])
	require.Equal(t, float64(1), r.Body["limit"])
	require.Equal(t, float64(1), r.Body["offset"])
	require.Equal(t, float64(90), r.Body["online_window_seconds"])
	r = f.do(t, "GET", "/api/devices", fl.admin, nil)
	require.Equal(t, float64(100), r.Body["limit"])
	require.Equal(t, float64(0), r.Body["offset"])

	draft := `{"match":"any","conditions":[{"field":"agent_version","op":"version_gte","value":"1.2"},{"field":"last_seen","op":"never"}]}`
	require.Equal(t, []string{"conn-host", "never-host"}, hostnameList(t, f.do(t, "GET", "/api/devices?filter="+url.QueryEscape(draft), fl.admin, nil), "devices"))
	require.Equal(t, []string{"never-host"}, hostnameList(t, f.do(t, "GET", "/api/devices?status=offline&filter="+url.QueryEscape(draft), fl.admin, nil), "devices"))
	require.Equal(t, []string{"conn-host"}, hostnameList(t, f.do(t, "GET", fmt.Sprintf("/api/devices?site=%d&filter=%s", fl.siteA, url.QueryEscape(draft)), fl.admin, nil), "devices"))
	saved := f.do(t, "POST", "/api/device_filters", fl.admin, map[string]any{"name": "Seen", "filter": map[string]any{"match": "all",
		"conditions": []any{map[string]any{"field": "last_seen", "op": "within_last", "value": 3600}}}})
	require.Equal(t, 201, saved.Status, saved.Raw)
	id := strconv.FormatInt(int64(saved.Body["id"].(float64)), 10)
	require.Equal(t, []string{"conn-host"}, hostnameList(t, f.do(t, "GET", "/api/devices?filter_id="+id+"&filter="+url.QueryEscape(draft), fl.admin, nil), "devices"))
	require.Equal(t, []string{"off-host", "disc-host", "conn-host"},
		hostnameList(t, f.do(t, "GET", "/api/devices?sort=last_seen&filter_id="+id, fl.admin, nil), "devices"))

	for query, field := range map[string]string{
		"limit=0": "limit", "limit=1001": "limit", "offset=-1": "offset", "sort=colour": "sort", "sort=metadata:501": "sort",
		"filter_id=abc": "filter_id", "filter_id=999999": "filter_id", "filter=%7B": "filter",
		"filter=" + url.QueryEscape(`{"match":"all","conditions":[{"field":"colour","op":"is","value":1}]}`): "filter.conditions[0].field",
	} {
		r := f.do(t, "GET", "/api/devices?"+query, fl.admin, nil)
		require.Equal(t, 400, r.Status, query)
		require.Equal(t, "validation_failed", r.Body["error"])
		require.NotEmpty(t, r.field(field), "%s: %s", query, r.Raw)
	}
}
