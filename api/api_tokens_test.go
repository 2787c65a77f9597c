package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-rmm/cairn"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/db"
)

// newAPIToken creates a token with session and returns its text and ID.
func (f *fixture) newAPIToken(t *testing.T, session, access string, days int) (string, float64) {
	t.Helper()
	r := f.do(t, "POST", "/api/auth/tokens", session, map[string]any{"name": "ci " + access, "expires_in_days": days, "access": access})
	require.Equal(t, 201, r.Status, r.Raw)
	return r.Body["token"].(string), r.Body["id"].(float64)
}

// auditEntries returns the audit trail, newest first.
func (f *fixture) auditEntries(t *testing.T, admin string) []map[string]any {
	t.Helper()
	page := f.do(t, "GET", "/api/server/audit?limit=500", admin, nil)
	require.Equal(t, 200, page.Status, page.Raw)
	var out []map[string]any
	for _, e := range page.Body["entries"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

// A token is shown once, works as a bearer token for reads and (write
// access) changes, is attributed in the audit trail, never starts a
// session, and stops working when revoked.
func TestAPITokenLifecycle(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))

	r := f.do(t, "POST", "/api/auth/tokens", admin, map[string]any{"name": "backup script", "expires_in_days": 30, "access": "write"})
	require.Equal(t, 201, r.Status, r.Raw)
	token, id := r.Body["token"].(string), r.Body["id"].(float64)
	require.True(t, strings.HasPrefix(token, "cairn_pat_"), token)
	require.Equal(t, "backup script", r.Body["name"])
	require.Equal(t, "write", r.Body["access"])
	expires, err := time.Parse(time.RFC3339Nano, r.Body["expires_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, f.clk.Now().Add(30*24*time.Hour), expires, time.Second)

	list := f.do(t, "GET", "/api/auth/tokens", admin, nil)
	require.Equal(t, 200, list.Status, list.Raw)
	require.NotContains(t, list.Raw, token)
	require.Len(t, list.Body["tokens"], 1)
	listed := list.Body["tokens"].([]any)[0].(map[string]any)
	require.Equal(t, id, listed["id"])
	require.Nil(t, listed["last_used_at"])
	require.Equal(t, false, listed["expired"])
	require.Equal(t, "admin", listed["created_by"])

	me := f.do(t, "GET", "/api/auth/me", token, nil)
	require.Equal(t, 200, me.Status, me.Raw)
	require.Equal(t, "admin", me.Body["username"])
	require.Empty(t, me.Header.Values("Set-Cookie"), "a token never starts a browser session")
	slug := uniqueSlug("tokened")
	r = f.do(t, "POST", "/api/sites", token, map[string]any{"name": "Tokened", "site_worker_slug": slug})
	require.Equal(t, 201, r.Status, r.Raw)

	lastUsed := func() any {
		return f.do(t, "GET", "/api/auth/tokens", admin, nil).Body["tokens"].([]any)[0].(map[string]any)["last_used_at"]
	}
	first := lastUsed()
	require.NotNil(t, first, "use is recorded")
	// At most one write a minute per token.
	f.clk.Advance(30 * time.Second)
	require.Equal(t, 200, f.do(t, "GET", "/api/auth/me", token, nil).Status)
	require.Equal(t, first, lastUsed())
	f.clk.Advance(31 * time.Second)
	require.Equal(t, 200, f.do(t, "GET", "/api/auth/me", token, nil).Status)
	require.NotEqual(t, first, lastUsed())

	// Both the read and the change are attributed to the admin and the
	// token; the session's own requests carry no token ID.
	entries := f.auditEntries(t, admin)
	var sawGet, sawPost bool
	for _, e := range entries {
		require.NotContains(t, fmt.Sprint(e), token)
		switch e["action"] {
		case "GET /api/auth/me":
			sawGet = true
			require.Equal(t, id, e["api_token_id"])
			require.Equal(t, "admin", e["username"])
		case "POST /api/sites":
			sawPost = true
			require.Equal(t, id, e["api_token_id"])
		case "POST /api/auth/tokens":
			require.Nil(t, e["api_token_id"])
		}
	}
	require.True(t, sawGet && sawPost, "token requests are audited: %v", entries)

	require.Equal(t, 204, f.do(t, "DELETE", fmt.Sprintf("/api/auth/tokens/%d", int64(id)), admin, nil).Status)
	r = f.do(t, "GET", "/api/auth/me", token, nil)
	require.Equal(t, 401, r.Status, r.Raw)
	require.Equal(t, "unauthorized", r.Body["error"])
	require.Equal(t, 404, f.do(t, "DELETE", fmt.Sprintf("/api/auth/tokens/%d", int64(id)), admin, nil).Status)
	require.Empty(t, f.do(t, "GET", "/api/auth/tokens", admin, nil).Body["tokens"])
}

// A read token gets 403 on every state-changing route, whatever its
// owner's role; its reads work.
func TestAPITokenReadOnlyRefusesEveryChange(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	read, _ := f.newAPIToken(t, admin, "read", 7)
	require.Equal(t, 200, f.do(t, "GET", "/api/sites", read, nil).Status)
	for _, rt := range f.engine.srv.Routes() {
		if rt.Method == "GET" || rt.Method == "HEAD" {
			continue
		}
		switch rt.Auth {
		case api.AuthToken, api.AuthAdmin, api.AuthDeviceOrToken:
		default:
			continue
		}
		r := f.do(t, rt.Method, pathParam.ReplaceAllString(rt.Pattern, "1"), read, map[string]any{})
		require.Equal(t, 403, r.Status, "%s %s: %s", rt.Method, rt.Pattern, r.Raw)
		require.Equal(t, "forbidden", r.Body["error"], "%s %s", rt.Method, rt.Pattern)
	}
	// The shell socket is a GET that opens a remote shell.
	r := f.do(t, "GET", "/api/shell/ws/1?token=x", read, nil)
	require.Equal(t, 403, r.Status, r.Raw)
	require.Equal(t, "forbidden", r.Body["error"])
	require.Len(t, f.do(t, "GET", "/api/sites", admin, nil).Body["sites"], 0, "nothing was created")
}

// A token is at most its owner, as the owner is now: a site-limited
// operator's token sees only the assigned sites, admin-only routes refuse
// a non-admin's token, and a change of role or sites, or the account's
// deletion, applies to the token at once.
func TestAPITokenScopeFollowsItsOperator(t *testing.T) {
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
	assign := func(ids ...int64) {
		r := f.do(t, "POST", "/api/user_site_assignments/assign", admin, map[string]any{"usernames": []string{"scoped"}, "site_ids": append([]int64{}, ids...)})
		require.Equal(t, 200, r.Status, r.Raw)
	}
	assign(north)
	token, _ := f.newAPIToken(t, operator, "write", 90)

	sites := f.do(t, "GET", "/api/sites", token, nil).Body["sites"].([]any)
	require.Len(t, sites, 1)
	require.Equal(t, "North", sites[0].(map[string]any)["name"])
	devices := f.do(t, "GET", "/api/sites/device_map", token, nil).Body["device_map"].(map[string]any)
	require.Contains(t, devices, "host-0")
	require.NotContains(t, devices, "host-1")
	r := f.do(t, "GET", "/api/users", token, nil)
	require.Equal(t, 403, r.Status, r.Raw)
	// Nor may it reach others' tokens.
	require.Equal(t, 403, f.do(t, "GET", "/api/auth/tokens?username=admin", token, nil).Status)

	assign() // the site assignment is removed
	require.Empty(t, f.do(t, "GET", "/api/sites", token, nil).Body["sites"])

	r = f.do(t, "POST", "/api/users/scoped/role", admin, map[string]any{"role": "admin"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, 200, f.do(t, "GET", "/api/users", token, nil).Status, "promoted: the token is an admin's")
	r = f.do(t, "POST", "/api/users/scoped/role", admin, map[string]any{"role": "operator"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, 403, f.do(t, "GET", "/api/users", token, nil).Status, "demoted: admin rights are gone at once")

	require.Equal(t, 204, f.do(t, "DELETE", "/api/users/scoped", admin, nil).Status)
	r = f.do(t, "GET", "/api/sites", token, nil)
	require.Equal(t, 401, r.Status, r.Raw)
}

// An administrator may make, list and revoke tokens of another operator
// (a service account); the token acts as that operator.
func TestAdminManagesAnotherOperatorsTokens(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	operator := f.operator(t, "robot")
	r := f.do(t, "POST", "/api/auth/tokens", admin, map[string]any{"name": "robot ci", "expires_in_days": 365, "access": "read", "username": "robot"})
	require.Equal(t, 201, r.Status, r.Raw)
	token, id := r.Body["token"].(string), int64(r.Body["id"].(float64))
	require.Equal(t, "robot", r.Body["username"])
	require.Equal(t, "robot", f.do(t, "GET", "/api/auth/me", token, nil).Body["username"])

	own := f.do(t, "GET", "/api/auth/tokens", operator, nil).Body["tokens"].([]any)
	require.Len(t, own, 1)
	require.Equal(t, "admin", own[0].(map[string]any)["created_by"])
	require.Len(t, f.do(t, "GET", "/api/auth/tokens?username=robot", admin, nil).Body["tokens"], 1)
	require.Empty(t, f.do(t, "GET", "/api/auth/tokens", admin, nil).Body["tokens"])

	// An operator cannot make or revoke tokens for anyone else.
	r = f.do(t, "POST", "/api/auth/tokens", operator, map[string]any{"name": "x", "expires_in_days": 1, "access": "read", "username": "admin"})
	require.Equal(t, 403, r.Status, r.Raw)
	require.Equal(t, 404, f.do(t, "GET", "/api/auth/tokens?username=ghost", admin, nil).Status)
	require.Equal(t, 404, f.do(t, "DELETE", fmt.Sprintf("/api/auth/tokens/%d", id), admin, nil).Status, "not the admin's own token")

	require.Equal(t, 204, f.do(t, "DELETE", fmt.Sprintf("/api/auth/tokens/%d?username=robot", id), admin, nil).Status)
	require.Equal(t, 401, f.do(t, "GET", "/api/auth/me", token, nil).Status)
}

// Bad requests name their field; expiry is bounded to 1..365 days.
func TestAPITokenRequestsAreValidated(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	for _, c := range []struct {
		field, problem string
		body           map[string]any
	}{
		{"name", "", map[string]any{"name": " ", "expires_in_days": 1, "access": "read"}},
		{"expires_in_days", "", map[string]any{"name": "x", "expires_in_days": 366, "access": "read"}},
		{"access", "", map[string]any{"name": "x", "expires_in_days": 1, "access": "admin"}},
		{"scopes", "may hold only read:device-content", map[string]any{"name": "x", "expires_in_days": 1, "access": "read", "scopes": []string{"write:device-content"}}},
		{"scopes", "may hold only read:device-content", map[string]any{"name": "x", "expires_in_days": 1, "access": "read", "scopes": []string{"read:device-content", ""}}},
		// A write token reads device content anyway: it takes no scope.
		{"scopes", "read tokens only", map[string]any{"name": "x", "expires_in_days": 1, "access": "write", "scopes": []string{"read:device-content"}}},
	} {
		r := f.do(t, "POST", "/api/auth/tokens", admin, c.body)
		require.Equal(t, 400, r.Status, r.Raw)
		require.Equal(t, "validation_failed", r.Body["error"], r.Raw)
		require.NotEmpty(t, r.field(c.field), r.Raw)
		require.Contains(t, r.field(c.field), c.problem, r.Raw)
	}
	require.Empty(t, f.do(t, "GET", "/api/auth/tokens", admin, nil).Body["tokens"], "nothing half-made")
	r := f.do(t, "POST", "/api/auth/tokens", admin, map[string]any{"name": "x", "expires_in_days": 0, "access": "read"})
	require.NotEmpty(t, r.field("expires_in_days"), r.Raw)
}

// A token cannot mint tokens, nor do what changes how its operator signs
// in or needs a fresh proof of identity, even with the password at hand.
func TestAPITokenCannotManageSignIn(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	token, id := f.newAPIToken(t, admin, "write", 7)
	proof := f.reauth(t, admin)
	for _, c := range []struct {
		method, path string
		body         map[string]any
	}{
		{"POST", "/api/auth/tokens", map[string]any{"name": "child", "expires_in_days": 365, "access": "write"}},
		{"POST", "/api/auth/logout", map[string]any{"all": true}},
		{"POST", "/api/auth/password/reset", map[string]any{"current_password": adminPassword, "new_password": "a brand new password 1"}},
		{"POST", "/api/auth/mfa/reset", map[string]any{"password": adminPassword}},
		{"POST", "/api/auth/passkeys/register/options", proof},
		{"POST", "/api/auth/reauth/passkey/options", map[string]any{}},
		{"DELETE", "/api/auth/passkeys/1", nil},
		{"POST", "/api/aegis/rotate", with(map[string]any{"current_passphrase": passphrase, "new_passphrase": "another long passphrase 1"}, proof)},
	} {
		r := f.do(t, c.method, c.path, token, c.body)
		require.Equal(t, 403, r.Status, "%s %s: %s", c.method, c.path, r.Raw)
		require.Equal(t, "forbidden", r.Body["error"])
	}
	require.Len(t, f.do(t, "GET", "/api/auth/tokens", admin, nil).Body["tokens"], 1, "no token was minted")
	require.Equal(t, 200, f.do(t, "GET", "/api/auth/me", admin, nil).Status, "the session lives on")
	// A write token may revoke (itself included): that only narrows access.
	require.Equal(t, 204, f.do(t, "DELETE", fmt.Sprintf("/api/auth/tokens/%d", int64(id)), token, nil).Status)
}

// A token stops working at its expiry and is then listed as expired.
func TestAPITokenExpires(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	token, _ := f.newAPIToken(t, admin, "read", 1)
	require.Equal(t, 200, f.do(t, "GET", "/api/auth/me", token, nil).Status)
	f.clk.Advance(24*time.Hour + time.Second)
	r := f.do(t, "GET", "/api/auth/me", token, nil)
	require.Equal(t, 401, r.Status, r.Raw)
	admin = f.login(t, f.url, "admin", adminPassword, f.creds[admin].secret).Body["token"].(string)
	listed := f.do(t, "GET", "/api/auth/tokens", admin, nil).Body["tokens"].([]any)
	require.Equal(t, true, listed[0].(map[string]any)["expired"])
}

// A token may open the event stream; the stream ends when the token is
// revoked, as a session's ends with the session.
func TestEventStreamEndsWithItsAPIToken(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	token, id := f.newAPIToken(t, admin, "read", 7)
	stream := openStream(t, f.url, token)
	require.Equal(t, 204, f.do(t, "DELETE", fmt.Sprintf("/api/auth/tokens/%d", int64(id)), admin, nil).Status)
	closed(t, stream, "session_ended")
}

// A read token may carry read:device-content (off by default); creation
// and the list show each token's scopes, an empty list when it has none.
func TestAPITokenScopesAreShown(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	scopes := func(r map[string]any) []any {
		t.Helper()
		list, ok := r["scopes"].([]any)
		require.True(t, ok, "scopes is a list: %v", r)
		return list
	}
	r := f.do(t, "POST", "/api/auth/tokens", admin, map[string]any{"name": "reader", "expires_in_days": 7, "access": "read"})
	require.Equal(t, 201, r.Status, r.Raw)
	require.Empty(t, scopes(r.Body), "off by default")
	r = f.do(t, "POST", "/api/auth/tokens", admin, map[string]any{"name": "content reader", "expires_in_days": 7, "access": "read",
		"scopes": []string{"read:device-content", "read:device-content"}})
	require.Equal(t, 201, r.Status, r.Raw)
	require.Equal(t, []any{"read:device-content"}, scopes(r.Body))
	r = f.do(t, "POST", "/api/auth/tokens", admin, map[string]any{"name": "writer", "expires_in_days": 7, "access": "write", "scopes": []string{}})
	require.Equal(t, 201, r.Status, r.Raw)
	require.Empty(t, scopes(r.Body))

	list := f.do(t, "GET", "/api/auth/tokens", admin, nil)
	require.Equal(t, 200, list.Status, list.Raw)
	got := map[string][]any{}
	for _, tok := range list.Body["tokens"].([]any) {
		tok := tok.(map[string]any)
		got[tok["name"].(string)] = scopes(tok)
	}
	require.Equal(t, map[string][]any{"reader": {}, "content reader": {"read:device-content"}, "writer": {}}, got)
}
