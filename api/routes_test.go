package api_test

import (
	"context"
	"net/http"
	"regexp"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/db"
)

var knownClasses = map[api.AuthClass]bool{
	api.AuthNone: true, api.AuthBootstrap: true, api.AuthToken: true, api.AuthMFAPending: true, api.AuthAdmin: true,
	api.AuthDevice: true, api.AuthRefresh: true, api.AuthDeviceOrToken: true, api.AuthSignedURL: true,
}

// Every route the router serves must come from a route table row with a
// known auth class: a route added any other way fails here.
func TestEveryRouteHasAnAuthClass(t *testing.T) {
	t.Parallel()
	f := setup(t)
	declared := map[string]api.AuthClass{}
	for _, rt := range f.engine.srv.Routes() {
		require.True(t, knownClasses[rt.Auth], "%s %s has unknown class %q", rt.Method, rt.Pattern, rt.Auth)
		key := rt.Method + " " + rt.Pattern
		_, dup := declared[key]
		require.False(t, dup, "%s declared twice", key)
		declared[key] = rt.Auth
	}
	router, ok := f.engine.srv.Handler().(chi.Routes)
	require.True(t, ok)
	served := 0
	err := chi.Walk(router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served++
		_, ok := declared[method+" "+route]
		require.True(t, ok, "%s %s is served but not in a route table", method, route)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, len(declared), served)
}

var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// The authorization matrix: every protected route refuses an anonymous
// caller, every admin route refuses an operator, and bootstrap steps refuse
// everyone once bootstrap is finished.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.admin(t)
	operator := f.operator(t, "matrix-operator")
	for _, rt := range f.engine.srv.Routes() {
		path := pathParam.ReplaceAllString(rt.Pattern, "1")
		t.Run(rt.Method+" "+rt.Pattern, func(t *testing.T) {
			anon := f.do(t, rt.Method, path, "", nil)
			switch rt.Auth {
			case api.AuthToken, api.AuthAdmin, api.AuthDeviceOrToken:
				require.Equal(t, 401, anon.Status, anon.Raw)
				require.Equal(t, "unauthorized", anon.Body["error"])
			case api.AuthDevice, api.AuthRefresh:
				// An anonymous caller is not an agent at all.
				require.Equal(t, 401, anon.Status, anon.Raw)
				require.Equal(t, "agent_context_required", anon.Body["error"])
			case api.AuthSignedURL:
				// Without a valid signature there is nothing to serve.
				require.Equal(t, 403, anon.Status, anon.Raw)
				require.Equal(t, "install_link_invalid", anon.Body["error"])
			case api.AuthBootstrap:
				if rt.Method != "GET" {
					require.Equal(t, 403, anon.Status, anon.Raw)
					require.Equal(t, "bootstrap_finished", anon.Body["error"])
				}
			default:
				require.NotEqual(t, 401, anon.Status, "public route refused an anonymous caller: %s", anon.Raw)
			}
			if rt.Auth == api.AuthDevice || rt.Auth == api.AuthRefresh {
				// An operator's session is not a device.
				r := f.do(t, rt.Method, path, operator, map[string]any{})
				require.Equal(t, 401, r.Status, r.Raw)
			}
			if rt.Auth == api.AuthAdmin {
				r := f.do(t, rt.Method, path, operator, map[string]any{})
				require.Equal(t, 403, r.Status, r.Raw)
				require.Equal(t, "forbidden", r.Body["error"])
			}
		})
	}
}

// The "operator of another site" column: an operator assigned elsewhere
// reads every Token route and must never see a site or device outside
// their scope, in any answer.
func TestNoRouteLeaksOutOfScopeSites(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	mine := f.do(t, "POST", "/api/sites", admin, map[string]any{"name": "Visible Site", "site_worker_slug": uniqueSlug("visible")})
	hidden := f.do(t, "POST", "/api/sites", admin, map[string]any{"name": "Hidden Site", "site_worker_slug": uniqueSlug("hidden")})
	require.Equal(t, 201, mine.Status)
	require.Equal(t, 201, hidden.Status)
	_, err := f.store.DeviceInsert(context.Background(), db.DeviceInsertParams{Guid: "hidden-guid", Hostname: "hidden-host", SiteID: int64(hidden.Body["site_id"].(float64))})
	require.NoError(t, err)
	operator := f.operator(t, "elsewhere")
	r := f.do(t, "POST", "/api/user_site_assignments/assign", admin, map[string]any{"usernames": []string{"elsewhere"}, "site_ids": []any{mine.Body["site_id"]}})
	require.Equal(t, 200, r.Status, r.Raw)

	checked := 0
	for _, rt := range f.engine.srv.Routes() {
		// Reads only (changes are covered by their own tests); the event
		// stream never ends, so it is read by the events tests.
		if rt.Method != "GET" || rt.Auth != api.AuthToken || rt.Pattern == "/api/realtime/events" {
			continue
		}
		path := pathParam.ReplaceAllString(rt.Pattern, "hidden-host")
		r := f.do(t, "GET", path, operator, nil)
		require.NotContains(t, r.Raw, "Hidden Site", "%s leaks a site outside scope", rt.Pattern)
		require.NotContains(t, r.Raw, "hidden-host", "%s leaks a device outside scope", rt.Pattern)
		require.NotContains(t, r.Raw, "hidden-guid", "%s leaks a device outside scope", rt.Pattern)
		checked++
	}
	require.Positive(t, checked)
}

// Bad input is the caller's fault, never the server's: every route that
// takes a body answers malformed, wrongly shaped or unknown-field bodies
// with a 4xx (validation_failed where the route gets that far), not a 500.
func TestNoRouteFailsOnBadBodies(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	for _, rt := range f.engine.srv.Routes() {
		if rt.Method != "POST" && rt.Method != "PUT" && rt.Method != "PATCH" {
			continue
		}
		path := pathParam.ReplaceAllString(rt.Pattern, "1")
		for _, body := range []string{`{"zz_unknown": 1}`, `{"broken":`, `[1, 2]`, `"text"`} {
			r := f.do(t, rt.Method, path, admin, body)
			require.GreaterOrEqual(t, r.Status, 400, "%s %s accepted %s: %s", rt.Method, rt.Pattern, body, r.Raw)
			require.Less(t, r.Status, 500, "%s %s failed on %s: %s", rt.Method, rt.Pattern, body, r.Raw)
		}
	}
}
