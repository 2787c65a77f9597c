package api_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func viewPath(r response) string {
	return "/api/device_list_views/" + strconv.FormatInt(int64(r.Body["id"].(float64)), 10)
}

// Views are per operator: others see one only once it is shared, and only
// its owner or an admin changes or deletes it.
func TestDeviceListViewsOwnershipAndSharing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	ann, bob := f.operator(t, "ann"), f.operator(t, "bob")
	filter := f.do(t, "POST", "/api/device_filters", admin, map[string]any{"name": "All", "filter": map[string]any{"match": "all",
		"conditions": []any{map[string]any{"field": "hostname", "op": "is_not_empty"}}}})
	require.Equal(t, 201, filter.Status, filter.Raw)
	filterID := filter.Body["id"].(float64)

	body := map[string]any{"name": "My grid", "columns": []string{"hostname", "status", "metadata:5"},
		"sort": map[string]any{"column": "last_seen", "direction": "desc"}, "filter_id": filterID,
		"filter": map[string]any{"match": "all", "conditions": []any{map[string]any{"field": "status", "op": "is", "value": "connected"}}}}
	c := f.do(t, "POST", "/api/device_list_views", ann, body)
	require.Equal(t, 201, c.Status, c.Raw)
	require.Equal(t, "ann", c.Body["owner"])
	require.Equal(t, false, c.Body["shared"])
	require.Equal(t, []any{"hostname", "status", "metadata:5"}, c.Body["columns"])
	require.Equal(t, map[string]any{"column": "last_seen", "direction": "desc"}, c.Body["sort"])
	require.Equal(t, filterID, c.Body["filter_id"])
	require.Equal(t, "Connected", c.Body["filter"].(map[string]any)["conditions"].([]any)[0].(map[string]any)["value"])
	for _, k := range []string{"id", "name", "created_at", "updated_at"} {
		require.Contains(t, c.Body, k)
	}
	path := viewPath(c)

	require.Equal(t, 409, f.do(t, "POST", "/api/device_list_views", ann, map[string]any{"name": "MY GRID", "columns": []string{"hostname"}}).Status)
	mine := f.do(t, "POST", "/api/device_list_views", bob, map[string]any{"name": "My grid", "columns": []string{"hostname"}, "sort": nil})
	require.Equal(t, 201, mine.Status, mine.Raw, "names are unique per owner")
	require.Nil(t, mine.Body["sort"])
	require.Nil(t, mine.Body["filter"])
	require.Nil(t, mine.Body["filter_id"])

	require.Equal(t, []string{"My grid"}, names(t, f.do(t, "GET", "/api/device_list_views", bob, nil), "views"))
	require.Equal(t, 404, f.do(t, "GET", path, bob, nil).Status, "a private view is invisible to others")
	require.Equal(t, 404, f.do(t, "PUT", path, bob, body).Status)

	body["shared"] = true
	u := f.do(t, "PUT", path, ann, body)
	require.Equal(t, 200, u.Status, u.Raw)
	require.Equal(t, true, u.Body["shared"])
	require.Len(t, f.do(t, "GET", "/api/device_list_views", bob, nil).Body["views"], 2)
	require.Equal(t, 200, f.do(t, "GET", path, bob, nil).Status)
	forbidden := f.do(t, "PUT", path, bob, body)
	require.Equal(t, 403, forbidden.Status, forbidden.Raw)
	require.Equal(t, 403, f.do(t, "DELETE", path, bob, nil).Status)

	body["name"] = "Renamed by admin"
	a := f.do(t, "PUT", path, admin, body)
	require.Equal(t, 200, a.Status, a.Raw)
	require.Equal(t, "ann", a.Body["owner"], "the owner stays")

	// A deleted saved filter leaves the view without it.
	require.Equal(t, 204, f.do(t, "DELETE", "/api/device_filters/"+strconv.FormatInt(int64(filterID), 10), admin, nil).Status)
	require.Nil(t, f.do(t, "GET", path, ann, nil).Body["filter_id"])

	for field, req := range map[string]map[string]any{
		"name":           {"name": " ", "columns": []string{"hostname"}},
		"columns":        {"name": "v", "columns": []string{}},
		"columns[1]":     {"name": "v", "columns": []string{"hostname", "colour"}},
		"sort.direction": {"name": "v", "columns": []string{"hostname"}, "sort": map[string]any{"column": "hostname", "direction": "up"}},
		"sort.column":    {"name": "v", "columns": []string{"hostname"}, "sort": map[string]any{"column": "guid", "direction": "asc"}},
		"filter_id":      {"name": "v", "columns": []string{"hostname"}, "filter_id": 999999},
		"filter.conditions[0].op": {"name": "v", "columns": []string{"hostname"},
			"filter": map[string]any{"match": "all", "conditions": []any{map[string]any{"field": "hostname", "op": "gt", "value": 1}}}},
	} {
		r := f.do(t, "POST", "/api/device_list_views", ann, req)
		require.Equal(t, 400, r.Status, field)
		require.NotEmpty(t, r.field(field), "%s: %s", field, r.Raw)
	}

	require.Equal(t, 204, f.do(t, "DELETE", path, ann, nil).Status)
	require.Equal(t, 404, f.do(t, "GET", path, ann, nil).Status)
	require.Equal(t, 204, f.do(t, "DELETE", viewPath(mine), admin, nil).Status, "an admin deletes anyone's view")
}
