package api_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// PostgreSQL stores no NUL in text or jsonb: a body carrying one is the
// client's error (400 validation_failed), never a failed query (500).
func TestNULInBodiesIsAClientError(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	for _, body := range []string{
		`{"name":"Nul\u0000Site","site_worker_slug":"` + uniqueSlug("nul") + `"}`,
		`{"name":"Nul Site","site_worker_slug":"` + uniqueSlug("nul") + `\u0000"}`,
	} {
		r := f.do(t, "POST", "/api/sites", admin, body)
		require.Equal(t, 400, r.Status, "%s: %s", body, r.Raw)
		require.Equal(t, "validation_failed", r.Body["error"])
	}
	r := f.do(t, "POST", "/api/sites", admin, `{"name":"Backslash \\u0000 Site","site_worker_slug":"`+uniqueSlug("nul")+`"}`)
	require.Equal(t, 201, r.Status, "an escaped backslash is text: %s", r.Raw)
}

// Path parameters and query strings are input too: odd values (out of
// range, negative, NUL, very long, not UTF-8) are the caller's error on
// every route, never a 500.
func TestNoRouteFailsOnOddPathValues(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	odd := []string{"9223372036854775808", "2147483648", "-1", "0", "%00", "a%00b", "%ff%fe", strings.Repeat("x", 600), "1e3", "%2F..%2F"}
	for _, rt := range f.engine.srv.Routes() {
		if rt.Pattern == "/api/realtime/events" {
			continue
		}
		if rt.Method == "GET" {
			path := pathParam.ReplaceAllString(rt.Pattern, "1") + "?hostname=a%00b&q=%ff&site_id=9223372036854775808&limit=-1&username=%00"
			r := f.do(t, "GET", path, admin, nil)
			require.Less(t, r.Status, 500, "GET %s: %s", path, r.Raw)
		}
		if !strings.Contains(rt.Pattern, "{") {
			continue
		}
		for _, v := range odd {
			path := pathParam.ReplaceAllString(rt.Pattern, v)
			var body any
			if rt.Method != "GET" && rt.Method != "DELETE" {
				body = map[string]any{}
			}
			r := f.do(t, rt.Method, path, admin, body)
			require.Less(t, r.Status, 500, "%s %s: %s", rt.Method, path, r.Raw)
		}
	}
}
