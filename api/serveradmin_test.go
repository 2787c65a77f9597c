package api_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The read-only server administration routes (issue 26).
func TestServerAdministrationReadOnly(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	op := f.operator(t, "time-operator")

	r := f.do(t, "GET", "/api/server/time", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, time.Local.String(), r.Body["timezone"])
	require.InDelta(t, float64(time.Now().UnixMilli()), r.Body["unix_ms"], 60000)

	r = f.do(t, "GET", "/api/server/timezones", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, false, r.Body["changeable"])
	names := map[string]bool{}
	for _, z := range r.Body["timezones"].([]any) {
		names[z.(map[string]any)["name"].(string)] = true
	}
	require.True(t, names["UTC"])
	require.True(t, names[r.Body["current"].(string)])

	r = f.do(t, "GET", "/api/server/overview", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	states := map[string]string{}
	for _, s := range r.Body["services"].([]any) {
		m := s.(map[string]any)
		states[m["key"].(string)] = m["state"].(string)
	}
	require.Equal(t, "running", states["engine"])
	require.Equal(t, "running", states["postgresql"])
	require.Equal(t, "running", states["temporal"])
	require.Equal(t, "engine", r.Body["host_runtime"].(map[string]any)["webui_traffic_owner"])
	require.Equal(t, "idle", r.Body["tunnel"].(map[string]any)["status"], "no tunnel asked for yet")

	// Token, not Admin: any signed-in operator.
	r = f.do(t, "GET", "/api/system/go-backend/status", op, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "ok", r.Body["status"])
	require.Equal(t, true, r.Body["cipher_unlocked"])
	require.NotEmpty(t, r.Body["build"].(map[string]any)["go_version"])

	for _, path := range []string{"/api/server/time", "/api/server/timezones", "/api/server/overview"} {
		require.Equal(t, 403, f.do(t, "GET", path, op, nil).Status, path)
		require.Equal(t, 401, f.do(t, "GET", path, "", nil).Status, path)
	}
	require.Equal(t, 401, f.do(t, "GET", "/api/system/go-backend/status", "", nil).Status)
}
