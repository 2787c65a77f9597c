package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/slapdtest"
)

const userPassword = "directory user pw 1"

// ldapProvider is a valid create body for the test slapd over plain LDAP.
func ldapProvider(name string) map[string]any {
	return map[string]any{"name": name, "kind": "ldap", "host": "127.0.0.1", "port": slapd.Port,
		"base_dn": slapdtest.BaseDN, "bind_dn": slapdtest.ServiceDN, "bind_password": slapdtest.ServicePassword}
}

func providerPath(id any, suffix string) string {
	return fmt.Sprintf("/api/directory/providers/%v%s", id, suffix)
}

// enabledProvider creates a provider from body, tests and enables it.
func (f *fixture) enabledProvider(t *testing.T, token string, body map[string]any) any {
	t.Helper()
	r := f.do(t, "POST", "/api/directory/providers", token, body)
	require.Equal(t, 201, r.Status, r.Raw)
	id := r.Body["provider_id"]
	r = f.do(t, "POST", providerPath(id, "/test"), token, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, true, r.Body["ok"], r.Raw)
	r = f.do(t, "PATCH", providerPath(id, ""), token, map[string]any{"enabled": true})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, true, r.Body["enabled"])
	return id
}

func (f *fixture) newSite(t *testing.T, token string) float64 {
	t.Helper()
	r := f.do(t, "POST", "/api/sites", token, map[string]any{"name": "Directory site", "site_worker_slug": uniqueSlug("dir")})
	require.Equal(t, 201, r.Status, r.Raw)
	return r.Body["site_id"].(float64)
}

// signIn is login for directory users: it keeps each user's TOTP secret
// from the first sign-in (MFA setup) for the later ones.
func (f *fixture) signIn(t *testing.T, secrets map[string]string, username string) response {
	t.Helper()
	r := f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": username, "password": userPassword})
	require.Equal(t, 200, r.Status, r.Raw)
	if setup, ok := r.Body["mfa_setup"].(map[string]any); ok {
		secrets[username] = setup["secret"].(string)
	}
	r = f.do(t, "POST", "/api/auth/mfa/verify", "", map[string]any{"pending_token": r.Body["pending_token"], "code": f.totp(t, secrets[username])})
	require.Equal(t, 200, r.Status, r.Raw)
	return r
}

func (f *fixture) siteIDs(t *testing.T, username string) []int64 {
	t.Helper()
	u, err := f.store.UserGetByUsername(context.Background(), username)
	require.NoError(t, err)
	ids, err := f.store.UserSiteIDs(context.Background(), u.ID)
	require.NoError(t, err)
	return cairn.SiteIDInts(ids)
}

func TestDirectoryProviderValidation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	token := f.sudo(t, f.admin(t))
	cases := []struct {
		name   string
		body   map[string]any
		fields []string
	}{
		{"empty", map[string]any{}, []string{"name", "kind", "host", "base_dn"}},
		{"bad values", map[string]any{"name": "x", "kind": "kerberos", "host": "ldap://x", "port": 70000, "base_dn": "not a dn",
			"user_filter": "objectClass=person", "username_attribute": "u id", "group_mode": "nested"},
			[]string{"kind", "host", "port", "base_dn", "user_filter", "username_attribute", "group_mode"}},
		{"bad secrets and CA", map[string]any{"name": "x", "kind": "ldap", "host": "h", "base_dn": "dc=x", "bind_password": "p",
			"ca_pem": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"}, []string{"bind_dn", "ca_pem"}},
		{"bad mappings", map[string]any{"name": "x", "kind": "ldaps", "host": "h", "base_dn": "dc=x",
			"host_overrides": map[string]any{"h": "not-an-ip"},
			"role_mappings":  []any{map[string]any{"group": "", "role": "root"}},
			"site_mappings":  []any{map[string]any{"group": "g", "site_ids": []any{987654}}}},
			[]string{"host_overrides", "role_mappings[0].group", "role_mappings[0].role", "site_mappings[0].site_ids"}},
		{"enabled at creation", map[string]any{"name": "x", "kind": "ldap", "host": "h", "base_dn": "dc=x", "enabled": true}, []string{"enabled"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, "POST", "/api/directory/providers", token, tc.body)
			require.Equal(t, 400, r.Status, r.Raw)
			require.Equal(t, "validation_failed", r.Body["error"])
			for _, field := range tc.fields {
				require.NotEmpty(t, r.field(field), "field %s in %s", field, r.Raw)
			}
		})
	}
	r := f.do(t, "GET", "/api/directory/providers", token, nil)
	require.Equal(t, 200, r.Status)
	require.Empty(t, r.Body["providers"], "no invalid provider was stored")
	r = f.do(t, "PATCH", "/api/directory/providers/abc", token, map[string]any{})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("provider_id"))
	r = f.do(t, "PATCH", providerPath(999999, ""), token, map[string]any{})
	require.Equal(t, 404, r.Status, r.Raw)
}

// The provider lifecycle: created disabled with defaults, never showing
// the bind password; enabled only after a passing test; a change of
// connection settings disables it again; deleted when unused.
func TestDirectoryProviderLifecycle(t *testing.T) {
	t.Parallel()
	f := setup(t)
	token := f.sudo(t, f.admin(t))
	r := f.do(t, "POST", "/api/directory/providers", token, ldapProvider("Corp LDAP"))
	require.Equal(t, 201, r.Status, r.Raw)
	require.NotContains(t, r.Raw, slapdtest.ServicePassword)
	require.Equal(t, true, r.Body["has_bind_password"])
	require.Equal(t, false, r.Body["enabled"])
	require.Equal(t, "uid", r.Body["username_attribute"])
	require.Equal(t, "group_search", r.Body["group_mode"])
	require.Nil(t, r.Body["last_test"])
	id := r.Body["provider_id"]

	r = f.do(t, "POST", "/api/directory/providers", token, ldapProvider("Corp LDAP"))
	require.Equal(t, 409, r.Status, r.Raw)
	require.NotEmpty(t, r.field("name"))

	r = f.do(t, "PATCH", providerPath(id, ""), token, map[string]any{"enabled": true})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("enabled"))

	r = f.do(t, "POST", providerPath(id, "/test"), token, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, true, r.Body["ok"], r.Raw)
	r = f.do(t, "PATCH", providerPath(id, ""), token, map[string]any{"enabled": true, "name": "Corp"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, true, r.Body["enabled"])
	require.Equal(t, "Corp", r.Body["name"])
	require.Equal(t, true, r.Body["last_test"].(map[string]any)["ok"])

	// Mappings are not connection settings: the provider stays enabled.
	r = f.do(t, "PATCH", providerPath(id, ""), token, map[string]any{"role_mappings": []any{map[string]any{"group": "ops", "role": "operator"}}})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, true, r.Body["enabled"])

	// A new bind password is a connection change, and a wrong one fails.
	r = f.do(t, "PATCH", providerPath(id, ""), token, map[string]any{"bind_password": "wrong service password"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, false, r.Body["enabled"])
	require.Nil(t, r.Body["last_test"])
	require.NotContains(t, r.Raw, "wrong service password")
	r = f.do(t, "POST", providerPath(id, "/test"), token, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, false, r.Body["ok"])
	require.Contains(t, r.Body["message"], "Invalid Credentials")
	require.NotContains(t, r.Raw, "wrong service password")
	r = f.do(t, "PATCH", providerPath(id, ""), token, map[string]any{"enabled": true})
	require.Equal(t, 400, r.Status, r.Raw)

	r = f.do(t, "GET", "/api/directory/providers", token, nil)
	require.Equal(t, 200, r.Status)
	require.Len(t, r.Body["providers"], 1)
	require.NotContains(t, r.Raw, "\"bind_password\"")
	require.NotContains(t, r.Raw, "wrong service password")

	r = f.do(t, "DELETE", providerPath(id, ""), token, nil)
	require.Equal(t, 204, r.Status, r.Raw)
	r = f.do(t, "DELETE", providerPath(id, ""), token, nil)
	require.Equal(t, 404, r.Status, r.Raw)
}

// A directory user signs in over HTTP with MFA setup, gets the role and
// sites of its groups, cannot manage a local password, and is refused once
// disabled (its sessions end).
func TestDirectorySignIn(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{}
	f := setup(t)
	token := f.sudo(t, f.admin(t))
	siteA, siteB := f.newSite(t, token), f.newSite(t, token)
	opUID, adminUID, nobodyUID := slapdtest.Unique("op"), slapdtest.Unique("boss"), slapdtest.Unique("nobody")
	opDN := slapd.User(t, opUID, userPassword)
	adminDN := slapd.User(t, adminUID, userPassword)
	slapd.User(t, nobodyUID, userPassword)
	opsGroup := slapdtest.Unique("ops")
	slapd.Group(t, opsGroup, opDN, adminDN)
	adminsGroup := slapd.Group(t, slapdtest.Unique("admins"), adminDN)
	siteGroup := slapdtest.Unique("site-a")
	slapd.Group(t, siteGroup, opDN)

	body := ldapProvider("Corp")
	body["role_mappings"] = []any{
		map[string]any{"group": opsGroup, "role": "operator"},
		map[string]any{"group": strings.ToUpper(adminsGroup), "role": "admin"},
	}
	body["site_mappings"] = []any{
		map[string]any{"group": siteGroup, "site_ids": []any{siteA}},
		map[string]any{"group": opsGroup, "site_ids": []any{siteB}},
	}
	id := f.enabledProvider(t, token, body)

	r := f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": opUID, "password": "wrong password"})
	require.Equal(t, 401, r.Status, r.Raw)
	require.Equal(t, "invalid_credentials", r.Body["error"])

	opToken := f.signIn(t, secrets, opUID).Body["token"].(string)
	r = f.do(t, "GET", "/api/auth/me", opToken, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "directory", r.Body["auth_source"])
	require.Equal(t, "operator", r.Body["role"])
	require.Equal(t, []int64{int64(siteA), int64(siteB)}, sorted(f.siteIDs(t, opUID)))

	boss := f.signIn(t, secrets, adminUID)
	require.Equal(t, "admin", boss.Body["user"].(map[string]any)["role"])
	require.Equal(t, []int64{int64(siteB)}, f.siteIDs(t, adminUID))

	r = f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": nobodyUID, "password": userPassword})
	require.Equal(t, 403, r.Status, r.Raw)

	// No local password management for directory accounts.
	r = f.do(t, "POST", "/api/auth/password/reset", opToken, map[string]any{"current_password": userPassword, "new_password": "a new password 123"})
	require.Equal(t, 403, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/auth/mfa/reset", opToken, map[string]any{"password": userPassword})
	require.Equal(t, 403, r.Status, r.Raw)

	// Sites are replaced from the mappings at each sign-in.
	r = f.do(t, "PATCH", providerPath(id, ""), token, map[string]any{"site_mappings": []any{}})
	require.Equal(t, 200, r.Status, r.Raw)
	f.signIn(t, secrets, opUID)
	require.Empty(t, f.siteIDs(t, opUID))

	r = f.do(t, "POST", "/api/users/"+opUID+"/directory-cache", token, map[string]any{"enabled": false})
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "GET", "/api/auth/me", opToken, nil)
	require.Equal(t, 401, r.Status, "disabling ends the sessions: %s", r.Raw)
	r = f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": opUID, "password": userPassword})
	require.Equal(t, 403, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/users/"+opUID+"/directory-cache", token, map[string]any{"enabled": true})
	require.Equal(t, 200, r.Status, r.Raw)
	f.signIn(t, secrets, opUID)

	// Disabled between the password step and the code step.
	r = f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": opUID, "password": userPassword})
	require.Equal(t, 200, r.Status, r.Raw)
	pending := r.Body["pending_token"]
	r = f.do(t, "POST", "/api/users/"+opUID+"/directory-cache", token, map[string]any{"enabled": false})
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/auth/mfa/verify", "", map[string]any{"pending_token": pending, "code": f.totp(t, secrets[opUID])})
	require.Equal(t, 403, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/users/"+opUID+"/directory-cache", token, map[string]any{"enabled": true})
	require.Equal(t, 200, r.Status, r.Raw)

	r = f.do(t, "POST", "/api/users/admin/directory-cache", token, map[string]any{"enabled": false})
	require.Equal(t, 404, r.Status, "local accounts are not directory accounts: %s", r.Raw)
	r = f.do(t, "POST", "/api/users/"+opUID+"/directory-cache", token, map[string]any{})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("enabled"))

	// A provider with cached users cannot be deleted.
	r = f.do(t, "DELETE", providerPath(id, ""), token, nil)
	require.Equal(t, 409, r.Status, r.Raw)
	r = f.do(t, "GET", "/api/directory/providers", token, nil)
	require.Equal(t, float64(2), r.Body["providers"].([]any)[0].(map[string]any)["cached_users"])
}

func sorted(ids []int64) []int64 {
	out := append([]int64{}, ids...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// Lookup diagnostics and sync, against the real directory: lookup escapes
// the username, reports groups and mappings and checks a password; sync
// disables a cached user removed from the directory.
func TestDirectoryLookupAndSync(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{}
	f := setup(t)
	token := f.sudo(t, f.admin(t))
	uid, goneUID := slapdtest.Unique("look"), slapdtest.Unique("gone")
	dn := slapd.User(t, uid, userPassword)
	goneDN := slapd.User(t, goneUID, userPassword)
	group := slapdtest.Unique("staff")
	slapd.Group(t, group, dn, goneDN)
	body := ldapProvider("Corp")
	body["role_mappings"] = []any{map[string]any{"group": group, "role": "operator"}}
	id := f.enabledProvider(t, token, body)

	r := f.do(t, "POST", providerPath(id, "/lookup-user"), token, map[string]any{"username": uid, "password": userPassword})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, true, r.Body["found"])
	require.Equal(t, dn, r.Body["dn"])
	require.Equal(t, "operator", r.Body["role"])
	require.Equal(t, true, r.Body["password_ok"])
	require.Len(t, r.Body["groups"], 1)
	require.Equal(t, []any{uid + "@cairn.test"}, r.Body["attributes"].(map[string]any)["mail"])
	require.NotContains(t, r.Raw, userPassword)

	r = f.do(t, "POST", providerPath(id, "/lookup-user"), token, map[string]any{"username": uid, "password": "wrong"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, false, r.Body["password_ok"])
	r = f.do(t, "POST", providerPath(id, "/lookup-user"), token, map[string]any{"username": uid})
	require.Nil(t, r.Body["password_ok"])
	// A wildcard is a literal character, not a filter.
	r = f.do(t, "POST", providerPath(id, "/lookup-user"), token, map[string]any{"username": "*"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, false, r.Body["found"])
	r = f.do(t, "POST", providerPath(id, "/lookup-user"), token, map[string]any{"username": ""})
	require.Equal(t, 400, r.Status, r.Raw)

	f.signIn(t, secrets, uid)
	gone := f.signIn(t, secrets, goneUID).Body["token"].(string)
	goneToken, _ := f.newAPIToken(t, gone, "read", 30)
	require.Equal(t, 200, f.do(t, "GET", "/api/auth/me", goneToken, nil).Status)
	slapd.Delete(t, goneDN)
	r = f.do(t, "POST", providerPath(id, "/sync"), token, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, float64(2), r.Body["checked"])
	require.Equal(t, []any{goneUID}, r.Body["disabled"])
	// A disabled account's API tokens stop working at once.
	r = f.do(t, "GET", "/api/auth/me", goneToken, nil)
	require.Equal(t, 403, r.Status, r.Raw)
	// Gone from the directory, its password cannot be checked, so the
	// answer cannot say that the account exists (disabled).
	r = f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": goneUID, "password": userPassword})
	require.Equal(t, 401, r.Status, r.Raw)
	require.Equal(t, "invalid_credentials", r.Body["error"])
	f.signIn(t, secrets, uid)

	// An unreachable directory fails the test and the lookup, and a sync
	// then disables nobody.
	r = f.do(t, "PATCH", providerPath(id, ""), token, map[string]any{"port": 1})
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "POST", providerPath(id, "/test"), token, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, false, r.Body["ok"])
	require.Contains(t, r.Body["message"], "connect to 127.0.0.1:1")
	r = f.do(t, "POST", providerPath(id, "/lookup-user"), token, map[string]any{"username": uid})
	require.Equal(t, 503, r.Status, r.Raw)
	r = f.do(t, "POST", providerPath(id, "/sync"), token, nil)
	require.Equal(t, 503, r.Status, r.Raw)
	u, err := f.store.UserGetByUsername(context.Background(), uid)
	require.NoError(t, err)
	require.False(t, u.DirectoryDisabled)
}

// LDAPS: the certificate is fetched for review (through a host override),
// trusted through the provider's CA PEM, and refused without it. The
// provider reads groups from memberOf, as with Active Directory.
func TestDirectoryLDAPS(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{}
	f := setup(t)
	token := f.sudo(t, f.admin(t))
	overrides := map[string]any{slapdtest.TLSHost: "127.0.0.1"}
	r := f.do(t, "POST", "/api/directory/providers/certificate", token, map[string]any{"host": slapdtest.TLSHost, "port": slapd.TLSPort, "host_overrides": overrides})
	require.Equal(t, 200, r.Status, r.Raw)
	block, _ := pem.Decode([]byte(slapd.CAPEM))
	sum := sha256.Sum256(block.Bytes)
	require.Equal(t, strings.ToUpper(strings.ReplaceAll(fmt.Sprintf("% x", sum[:]), " ", ":")), r.Body["sha256_fingerprint"])
	require.Equal(t, slapd.CAPEM, r.Body["pem"])
	require.Contains(t, r.Body["subject"], "CN="+slapdtest.TLSHost)
	require.Contains(t, r.Body["sans"], slapdtest.TLSHost)
	r = f.do(t, "POST", "/api/directory/providers/certificate", token, map[string]any{"host": "", "port": 0})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("host"))
	require.NotEmpty(t, r.field("port"))

	uid := slapdtest.Unique("tls")
	dn := slapd.User(t, uid, userPassword)
	group := slapdtest.Unique("tls-admins")
	slapd.Group(t, group, dn)
	body := map[string]any{"name": "AD", "kind": "active_directory", "host": slapdtest.TLSHost, "port": slapd.TLSPort,
		"host_overrides": overrides, "base_dn": slapdtest.BaseDN, "username_attribute": "uid", "user_filter": "(objectClass=inetOrgPerson)",
		"bind_dn": slapdtest.ServiceDN, "bind_password": slapdtest.ServicePassword,
		"role_mappings": []any{map[string]any{"group": group, "role": "admin"}}}
	r = f.do(t, "POST", "/api/directory/providers", token, body)
	require.Equal(t, 201, r.Status, r.Raw)
	require.Equal(t, "member_of", r.Body["group_mode"])
	id := r.Body["provider_id"]
	r = f.do(t, "POST", providerPath(id, "/test"), token, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, false, r.Body["ok"], "an unknown CA is refused")
	require.Contains(t, r.Body["message"], "certificate")

	r = f.do(t, "PATCH", providerPath(id, ""), token, map[string]any{"ca_pem": slapd.CAPEM})
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "POST", providerPath(id, "/test"), token, nil)
	require.Equal(t, true, r.Body["ok"], r.Raw)
	r = f.do(t, "PATCH", providerPath(id, ""), token, map[string]any{"enabled": true})
	require.Equal(t, 200, r.Status, r.Raw)

	r = f.do(t, "POST", providerPath(id, "/lookup-user"), token, map[string]any{"username": uid})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "admin", r.Body["role"], r.Raw)
	me := f.signIn(t, secrets, uid)
	require.Equal(t, "admin", me.Body["user"].(map[string]any)["role"])
	require.Equal(t, "directory", me.Body["user"].(map[string]any)["auth_source"])
}

// The sites a mapping can target are listed within the caller's scope: an
// operator sees assigned sites only, an admin every site.
func TestDirectorySites(t *testing.T) {
	t.Parallel()
	f := setup(t)
	token := f.sudo(t, f.admin(t))
	site := f.newSite(t, token)
	op := f.operator(t, "dir-sites-operator")
	r := f.do(t, "GET", "/api/directory/sites", op, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Empty(t, r.Body["sites"])

	r = f.do(t, "POST", "/api/user_site_assignments/assign", token, map[string]any{"usernames": []string{"dir-sites-operator"}, "site_ids": []any{site}})
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "GET", "/api/directory/sites", op, nil)
	sites := r.Body["sites"].([]any)
	require.Len(t, sites, 1)
	require.Equal(t, site, sites[0].(map[string]any)["id"])
	require.Equal(t, "Directory site", sites[0].(map[string]any)["name"])
	require.True(t, strings.HasPrefix(sites[0].(map[string]any)["slug"].(string), "dir-"))
	require.Len(t, f.do(t, "GET", "/api/directory/sites", token, nil).Body["sites"], 1)
}

// After a forced cipher reset the stored bind password cannot be opened:
// the provider test and sign-in say so clearly (never a 500) until an
// administrator enters the password again.
func TestDirectoryBindPasswordUnreadableAfterCipherReset(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{}
	f := setup(t)
	token := f.sudo(t, f.admin(t))
	uid := slapdtest.Unique("reset")
	dn := slapd.User(t, uid, userPassword)
	group := slapd.Group(t, slapdtest.Unique("reset-ops"), dn)
	body := ldapProvider("Reset corp")
	body["role_mappings"] = []any{map[string]any{"group": group, "role": "operator"}}
	id := f.enabledProvider(t, token, body)

	// What a force reset does to the cipher, without the recovery journey.
	ctx := context.Background()
	require.NoError(t, f.store.AegisStateDelete(ctx))
	f.engine.cipher.Lock()
	require.NoError(t, f.engine.cipher.Setup(ctx, "another long passphrase"))

	r := f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": uid, "password": userPassword})
	require.Equal(t, 503, r.Status, r.Raw)
	require.Equal(t, "unavailable", r.Body["error"], r.Raw)
	require.Contains(t, r.Body["message"], "administrator enters its service-account password again")
	require.Empty(t, r.Header.Get("Retry-After"), "trying again does not help until an administrator acts")
	r = f.do(t, "POST", providerPath(id, "/test"), token, nil)
	require.NotEqual(t, 500, r.Status, r.Raw)
	require.NotContains(t, r.Raw, slapdtest.ServicePassword)

	r = f.do(t, "PATCH", providerPath(id, ""), token, map[string]any{"bind_password": slapdtest.ServicePassword})
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "POST", providerPath(id, "/test"), token, nil)
	require.Equal(t, true, r.Body["ok"], r.Raw)
	require.Equal(t, 200, f.do(t, "PATCH", providerPath(id, ""), token, map[string]any{"enabled": true}).Status)
	require.Equal(t, 200, f.signIn(t, secrets, uid).Status)
}
