package api_test

import (
	"context"
	"fmt"
	"github.com/cairn-rmm/cairn"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/db"
)

func TestOperatorAccountsLifecycle(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))

	r := f.do(t, "POST", "/api/users", admin, map[string]any{"username": "x", "password": "short", "role": "boss"})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("username"))
	require.NotEmpty(t, r.field("password"))
	require.NotEmpty(t, r.field("role"))

	r = f.do(t, "POST", "/api/users", admin, map[string]any{"username": "Alice", "password": "alice password 1", "role": "operator"})
	require.Equal(t, 201, r.Status, r.Raw)
	require.Equal(t, "alice", r.Body["username"])
	require.Equal(t, true, r.Body["mfa_enabled"])
	require.Equal(t, false, r.Body["mfa_configured"])
	require.NotContains(t, r.Raw, "alice password 1")
	r = f.do(t, "POST", "/api/users", admin, map[string]any{"username": "alice", "password": "alice password 1", "role": "operator"})
	require.Equal(t, 409, r.Status)
	require.NotEmpty(t, r.field("username"))

	// A new operator sets up TOTP at the first sign-in.
	first := f.call(t, f.url, "POST", "/api/auth/login", "", map[string]any{"username": "alice", "password": "alice password 1"})
	require.Equal(t, 200, first.Status, first.Raw)
	require.NotNil(t, first.Body["mfa_setup"])
	alice := f.login(t, f.url, "alice", "alice password 1", "").Body["token"].(string)

	// Admin resets the password: the old sessions end, the new password works.
	r = f.do(t, "POST", "/api/users/alice/reset_password", admin, map[string]any{"password": "short"})
	require.Equal(t, 400, r.Status)
	r = f.do(t, "POST", "/api/users/alice/reset_password", admin, map[string]any{"password": "alice new password"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.EqualValues(t, 0, r.Body["api_tokens_revoked"])
	require.Equal(t, 401, f.do(t, "GET", "/api/auth/me", alice, nil).Status)

	// MFA disabled by an admin: password alone signs in.
	r = f.do(t, "POST", "/api/users/alice/mfa", admin, map[string]any{"action": "off"})
	require.Equal(t, 400, r.Status)
	r = f.do(t, "POST", "/api/users/alice/mfa", admin, map[string]any{"action": "disable"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, false, r.Body["mfa_enabled"])
	direct := f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": "alice", "password": "alice new password"})
	require.Equal(t, 200, direct.Status, direct.Raw)
	require.Equal(t, false, direct.Body["mfa_required"])
	require.NotEmpty(t, direct.Body["token"])
	r = f.do(t, "POST", "/api/users/alice/mfa", admin, map[string]any{"action": "enable"})
	require.Equal(t, true, r.Body["mfa_enabled"])
	require.EqualValues(t, 0, r.Body["api_tokens_revoked"])
	r = f.do(t, "POST", "/api/users/alice/mfa", admin, map[string]any{"action": "reset"})
	require.Equal(t, false, r.Body["mfa_configured"])

	// Role changes apply at once: the sessions end.
	token := direct.Body["token"].(string)
	r = f.do(t, "POST", "/api/users/alice/role", admin, map[string]any{"role": "admin"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "admin", r.Body["role"])
	require.Equal(t, 401, f.do(t, "GET", "/api/auth/me", token, nil).Status)

	list := f.do(t, "GET", "/api/users", admin, nil)
	require.Equal(t, 200, list.Status)
	require.Len(t, list.Body["users"], 2)
	require.NotContains(t, list.Raw, "password\"")

	require.Equal(t, 404, f.do(t, "DELETE", "/api/users/nobody", admin, nil).Status)
	require.Equal(t, 204, f.do(t, "DELETE", "/api/users/alice", admin, nil).Status)
	require.Len(t, f.do(t, "GET", "/api/users", admin, nil).Body["users"], 1)
}

func TestTheLastAdminStays(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	r := f.do(t, "POST", "/api/users/admin/role", admin, map[string]any{"role": "operator"})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "last_admin", r.Body["error"])
	r = f.do(t, "DELETE", "/api/users/admin", admin, nil)
	require.Equal(t, 409, r.Status, r.Raw)

	// With a second active admin, the first may step down.
	require.Equal(t, 201, f.do(t, "POST", "/api/users", admin, map[string]any{"username": "second", "password": "second admin pass", "role": "admin"}).Status)
	f.login(t, f.url, "second", "second admin pass", "")
	r = f.do(t, "POST", "/api/users/admin/role", admin, map[string]any{"role": "operator"})
	require.Equal(t, 200, r.Status, r.Raw)
}

// Site scope: an operator sees only assigned sites and their devices; the
// rest is as if it did not exist.
func TestOperatorsSeeOnlyTheirSites(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := func(name string) int64 {
		r := f.do(t, "POST", "/api/sites", admin, map[string]any{"name": name, "site_worker_slug": uniqueSlug(strings.ToLower(name))})
		require.Equal(t, 201, r.Status, r.Raw)
		return int64(r.Body["site_id"].(float64))
	}
	north, south := site("North"), site("South")
	for i, s := range []int64{north, south} {
		_, err := f.store.DeviceInsert(context.Background(), db.DeviceInsertParams{Guid: cairn.DeviceGUID(fmt.Sprint("g", i)), Hostname: fmt.Sprint("host-", i), SiteID: cairn.SiteID(s)})
		require.NoError(t, err)
	}
	operator := f.operator(t, "scoped")

	require.Empty(t, f.do(t, "GET", "/api/sites", operator, nil).Body["sites"])
	require.Empty(t, f.do(t, "GET", "/api/sites/device_map", operator, nil).Body["device_map"])

	r := f.do(t, "POST", "/api/user_site_assignments/assign", admin, map[string]any{"usernames": []string{"scoped"}, "site_ids": []int64{north, 999999}})
	require.Equal(t, 404, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/user_site_assignments/assign", admin, map[string]any{"usernames": []string{"scoped", "ghost"}, "site_ids": []int64{north}})
	require.Equal(t, 404, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/user_site_assignments/assign", admin, map[string]any{"usernames": []string{"scoped"}})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("site_ids"))
	r = f.do(t, "POST", "/api/user_site_assignments/assign", admin, map[string]any{"usernames": []string{"scoped"}, "site_ids": []int64{north}})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, []any{float64(north)}, r.Body["assignments"].(map[string]any)["scoped"])

	sites := f.do(t, "GET", "/api/sites", operator, nil).Body["sites"].([]any)
	require.Len(t, sites, 1)
	require.Equal(t, "North", sites[0].(map[string]any)["name"])
	devices := f.do(t, "GET", "/api/sites/device_map", operator, nil).Body["device_map"].(map[string]any)
	require.Contains(t, devices, "host-0")
	require.NotContains(t, devices, "host-1")
	require.Len(t, f.do(t, "GET", "/api/sites/device_map", admin, nil).Body["device_map"], 2)

	sel := f.do(t, "POST", "/api/user_site_assignments/selection", admin, map[string]any{"usernames": []string{"scoped", "admin"}})
	require.Equal(t, 200, sel.Status, sel.Raw)
	require.Equal(t, []any{}, sel.Body["assignments"].(map[string]any)["admin"])
	users := f.do(t, "GET", "/api/users", admin, nil).Body["users"].([]any)
	for _, u := range users {
		if u.(map[string]any)["username"] == "scoped" {
			require.Equal(t, []any{float64(north)}, u.(map[string]any)["site_ids"])
		}
	}

	// Replacing with an empty list removes the scope again.
	r = f.do(t, "POST", "/api/user_site_assignments/assign", admin, map[string]any{"usernames": []string{"scoped"}, "site_ids": []int64{}})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Empty(t, f.do(t, "GET", "/api/sites", operator, nil).Body["sites"])
}

func TestAuditTrailRecordsChangesNotSecrets(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	slug := uniqueSlug("audited")
	require.Equal(t, 201, f.do(t, "POST", "/api/sites", admin, map[string]any{"name": "Audited", "site_worker_slug": slug}).Status)
	require.Equal(t, 401, f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": "mallory", "password": "guessing password"}).Status)
	require.Equal(t, 400, f.do(t, "POST", "/api/users", admin, map[string]any{"username": "u", "password": "secret-in-body-123", "role": "x"}).Status)
	f.do(t, "GET", "/api/sites", admin, nil) // reads are not audited
	operator := f.operator(t, "auditor")
	require.Equal(t, 403, f.do(t, "GET", "/api/server/audit", operator, nil).Status)

	page := f.do(t, "GET", "/api/server/audit?limit=500", admin, nil)
	require.Equal(t, 200, page.Status, page.Raw)
	require.NotContains(t, page.Raw, "secret-in-body-123")
	require.NotContains(t, page.Raw, "guessing password")
	var actions []string
	byAction := map[string]map[string]any{}
	for _, e := range page.Body["entries"].([]any) {
		entry := e.(map[string]any)
		actions = append(actions, entry["action"].(string))
		require.NotEqual(t, "GET", strings.Fields(entry["action"].(string))[0])
		if _, seen := byAction[entry["action"].(string)]; !seen {
			byAction[entry["action"].(string)] = entry // newest first
		}
	}
	site := byAction["POST /api/sites"]
	require.Equal(t, "admin", site["username"])
	require.Equal(t, float64(201), site["status"])
	require.Equal(t, "success", site["outcome"])
	require.NotEmpty(t, site["client_addr"])

	users := byAction["POST /api/users"]
	require.Equal(t, "validation_failed", users["outcome"])

	var mallory map[string]any
	for _, e := range page.Body["entries"].([]any) {
		if e.(map[string]any)["username"] == "mallory" {
			mallory = e.(map[string]any)
		}
	}
	require.NotNil(t, mallory, "a failed sign-in is recorded with the username tried")
	require.Equal(t, "invalid_credentials", mallory["outcome"])
	require.Contains(t, actions, "POST /api/bootstrap/aegis/setup")

	// Paging and filtering.
	one := f.do(t, "GET", "/api/server/audit?limit=1", admin, nil)
	require.Len(t, one.Body["entries"], 1)
	next := one.Body["next_before_id"].(float64)
	older := f.do(t, "GET", fmt.Sprintf("/api/server/audit?limit=1&before_id=%d", int64(next)), admin, nil)
	require.Less(t, older.Body["entries"].([]any)[0].(map[string]any)["id"].(float64), next)
	only := f.do(t, "GET", "/api/server/audit?username=mallory", admin, nil)
	require.Len(t, only.Body["entries"], 1)
	require.Equal(t, 400, f.do(t, "GET", "/api/server/audit?limit=0", admin, nil).Status)
}

// An administrator's API token cannot administer accounts or directories,
// and neither can a session whose operator has not proved who they are
// again within the window (issue 21 item 5: "an admin API token can mint
// accounts").
func TestAccountAdministrationNeedsARecentlyReauthenticatedSession(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	opSession := f.operator(t, "victim")
	token, _ := f.newAPIToken(t, admin, "write", 7)
	routes := []struct {
		method, path string
		body         map[string]any
	}{
		{"POST", "/api/users", map[string]any{"username": "minted", "password": "minted password 1", "role": "admin"}},
		{"DELETE", "/api/users/victim", nil},
		{"POST", "/api/users/victim/reset_password", map[string]any{"password": "attacker password 1"}},
		{"POST", "/api/users/victim/role", map[string]any{"role": "admin"}},
		{"POST", "/api/users/victim/mfa", map[string]any{"action": "disable"}},
		{"POST", "/api/user_site_assignments/assign", map[string]any{"usernames": []string{"victim"}, "site_ids": []int64{}}},
		{"POST", "/api/users/victim/directory-cache", map[string]any{"enabled": false}},
		{"POST", "/api/directory/providers", map[string]any{"name": "evil", "host": "ldap.example.test"}},
		{"PATCH", "/api/directory/providers/1", map[string]any{"enabled": true}},
		{"DELETE", "/api/directory/providers/1", nil},
		{"POST", "/api/directory/providers/1/sync", nil},
		{"POST", "/api/directory/providers/1/lookup-user", map[string]any{"username": "victim", "password": "guess"}},
	}
	for _, c := range routes {
		r := f.do(t, c.method, c.path, token, c.body)
		require.Equal(t, 403, r.Status, "token %s %s: %s", c.method, c.path, r.Raw)
		require.Equal(t, "forbidden", r.Body["error"], "%s %s", c.method, c.path)
		r = f.do(t, c.method, c.path, admin, c.body)
		require.Equal(t, 403, r.Status, "session %s %s: %s", c.method, c.path, r.Raw)
		require.Equal(t, "reauthentication_required", r.Body["error"], "%s %s", c.method, c.path)
	}
	r := f.do(t, "POST", "/api/auth/reauth", token, f.reauth(t, admin))
	require.Equal(t, 403, r.Status, "a token cannot re-authenticate: %s", r.Raw)
	r = f.do(t, "POST", "/api/auth/reauth", admin, map[string]any{"password": adminPassword, "totp_code": "000000"})
	require.Equal(t, 403, r.Status, r.Raw)
	require.Equal(t, "reauthentication_required", r.Body["error"])
	list := f.do(t, "GET", "/api/users", admin, nil)
	require.Len(t, list.Body["users"], 2, "nothing was minted or deleted")
	require.Equal(t, 200, f.do(t, "GET", "/api/auth/me", opSession, nil).Status, "the victim's session lives on")

	// Proved: the window opens for this session, and a reset revokes the
	// victim's API tokens and says how many.
	r = f.do(t, "POST", "/api/auth/reauth", admin, f.reauth(t, admin))
	require.Equal(t, 200, r.Status, r.Raw)
	require.NotEmpty(t, r.Body["reauthenticated_until"])
	victimRead, _ := f.newAPIToken(t, opSession, "read", 7)
	victimWrite, _ := f.newAPIToken(t, opSession, "write", 7)
	r = f.do(t, "POST", "/api/users/victim/reset_password", admin, map[string]any{"password": "victim new password"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.EqualValues(t, 2, r.Body["api_tokens_revoked"])
	for _, tok := range []string{victimRead, victimWrite} {
		require.Equal(t, 401, f.do(t, "GET", "/api/auth/me", tok, nil).Status)
	}
	victim := f.login(t, f.url, "victim", "victim new password", f.secretOf(t, opSession)).Body["token"].(string)
	victimToken, _ := f.newAPIToken(t, victim, "read", 7)
	r = f.do(t, "POST", "/api/users/victim/mfa", admin, map[string]any{"action": "reset"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.EqualValues(t, 1, r.Body["api_tokens_revoked"])
	require.Equal(t, 401, f.do(t, "GET", "/api/auth/me", victimToken, nil).Status)

	// The window closes.
	f.clk.Advance(16 * time.Minute)
	r = f.do(t, "POST", "/api/users", admin, routes[0].body)
	require.Equal(t, 403, r.Status, r.Raw)
	require.Equal(t, "reauthentication_required", r.Body["error"])
}

// An operator's own password or MFA reset revokes their API tokens too.
func TestOwnResetsRevokeAPITokens(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	tok, _ := f.newAPIToken(t, admin, "read", 7)
	r := f.do(t, "POST", "/api/auth/password/reset", admin, map[string]any{"current_password": adminPassword, "new_password": "a brand new password 1"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.EqualValues(t, 1, r.Body["api_tokens_revoked"])
	require.Equal(t, 401, f.do(t, "GET", "/api/auth/me", tok, nil).Status)
	tok, _ = f.newAPIToken(t, admin, "write", 7)
	r = f.do(t, "POST", "/api/auth/mfa/reset", admin, map[string]any{"password": "a brand new password 1"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.EqualValues(t, 1, r.Body["api_tokens_revoked"])
	require.Equal(t, 401, f.do(t, "GET", "/api/auth/me", tok, nil).Status)
	require.Equal(t, 200, f.do(t, "GET", "/api/auth/me", admin, nil).Status, "the session that reset lives on")
}
