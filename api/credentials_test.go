package api_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/cairn-rmm/cairn"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/credentials"
)

const (
	firstPassword  = "first-Secret-Pa55"
	secondPassword = "second-Secret-Pa55"
)

// noSecrets fails when any response carries one of the test passwords.
func noSecrets(t *testing.T, rs ...response) {
	t.Helper()
	for _, r := range rs {
		require.NotContains(t, r.Raw, firstPassword)
		require.NotContains(t, r.Raw, secondPassword)
		require.NotContains(t, r.Raw, `"password"`)
	}
}

func (f *fixture) createSite(t *testing.T, admin, prefix string) int64 {
	t.Helper()
	r := f.do(t, "POST", "/api/sites", admin, map[string]any{"name": prefix, "site_worker_slug": uniqueSlug(prefix)})
	require.Equal(t, 201, r.Status, r.Raw)
	return int64(r.Body["site_id"].(float64))
}

func (f *fixture) createCredential(t *testing.T, admin, name string, siteID any) int64 {
	t.Helper()
	r := f.do(t, "POST", "/api/credentials", admin, map[string]any{"name": name, "connection_type": "Windows",
		"credential_type": "Machine", "username": "Administrator", "password": firstPassword, "site_id": siteID})
	require.Equal(t, 201, r.Status, r.Raw)
	noSecrets(t, r)
	return int64(r.Body["credential_id"].(float64))
}

func credentialNames(t *testing.T, r response) []string {
	t.Helper()
	require.Equal(t, 200, r.Status, r.Raw)
	var names []string
	for _, c := range r.Body["credentials"].([]any) {
		names = append(names, c.(map[string]any)["name"].(string))
	}
	return names
}

func TestCredentialLifecycleNeverShowsThePassword(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "creds")

	created := f.do(t, "POST", "/api/credentials", admin, map[string]any{"name": "Domain admin", "connection_type": "WinRM",
		"credential_type": "Domain", "username": "svc-rmm", "domain": "corp.example", "password": firstPassword, "site_id": site})
	require.Equal(t, 201, created.Status, created.Raw)
	id := int64(created.Body["credential_id"].(float64))
	require.Equal(t, "Domain admin", created.Body["name"])
	require.Equal(t, "WinRM", created.Body["connection_type"])
	require.Equal(t, "Domain", created.Body["credential_type"])
	require.Equal(t, "corp.example", created.Body["domain"])
	require.Equal(t, float64(site), created.Body["site_id"])
	require.Equal(t, true, created.Body["has_password"])
	require.Equal(t, "ok", created.Body["secret_status"])

	path := fmt.Sprintf("/api/credentials/%d", id)
	got := f.do(t, "GET", path, admin, nil)
	require.Equal(t, 200, got.Status, got.Raw)
	list := f.do(t, "GET", "/api/credentials", admin, nil)
	require.Equal(t, []string{"Domain admin"}, credentialNames(t, list))

	// PUT without a password keeps it; with one replaces it.
	kept := f.do(t, "PUT", path, admin, map[string]any{"name": "Renamed", "connection_type": "Windows",
		"credential_type": "Machine", "username": "Administrator", "site_id": nil})
	require.Equal(t, 200, kept.Status, kept.Raw)
	require.Equal(t, "Renamed", kept.Body["name"])
	require.Nil(t, kept.Body["site_id"])
	require.Nil(t, kept.Body["domain"])
	sec, err := f.engine.core.Credentials.Reveal(context.Background(), id, cairn.SiteID(site))
	require.NoError(t, err)
	require.Equal(t, firstPassword, sec.Password)
	replaced := f.do(t, "PUT", path, admin, map[string]any{"name": "Renamed", "connection_type": "Windows",
		"credential_type": "Machine", "username": "Administrator", "password": secondPassword})
	require.Equal(t, 200, replaced.Status, replaced.Raw)
	sec, err = f.engine.core.Credentials.Reveal(context.Background(), id, cairn.SiteID(site))
	require.NoError(t, err)
	require.Equal(t, secondPassword, sec.Password)

	deleted := f.do(t, "DELETE", path, admin, nil)
	require.Equal(t, 200, deleted.Status, deleted.Raw)
	gone := f.do(t, "GET", path, admin, nil)
	require.Equal(t, 404, gone.Status, gone.Raw)
	again := f.do(t, "DELETE", path, admin, nil)
	require.Equal(t, 404, again.Status, again.Raw)
	noSecrets(t, created, got, list, kept, replaced, deleted, gone, again)
}

func TestCredentialValidation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))

	r := f.do(t, "POST", "/api/credentials", admin, map[string]any{"name": "", "connection_type": "SSH",
		"credential_type": "Local", "username": "", "domain": "not a domain", "password": firstPassword, "site_id": 999999})
	require.Equal(t, 400, r.Status, r.Raw)
	require.Equal(t, "validation_failed", r.Body["error"])
	for _, field := range []string{"name", "connection_type", "credential_type", "username", "site_id"} {
		require.NotEmpty(t, r.field(field), "field %s: %s", field, r.Raw)
	}
	noSecrets(t, r)

	r = f.do(t, "POST", "/api/credentials", admin, map[string]any{"name": "x", "connection_type": "Windows",
		"credential_type": "Machine", "username": "u"})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("password"))

	r = f.do(t, "POST", "/api/credentials", admin, map[string]any{"name": "x", "connection_type": "Windows",
		"credential_type": "Machine", "username": "u", "password": firstPassword, "secret": "x"})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("secret"))
	r = f.do(t, "POST", "/api/credentials", admin, map[string]any{"name": "x", "connection_type": "Windows",
		"credential_type": "Machine", "username": "u", "password": firstPassword, "site_id": "one"})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("site_id"))

	id := f.createCredential(t, admin, "kept", nil)
	r = f.do(t, "PUT", fmt.Sprintf("/api/credentials/%d", id), admin, map[string]any{"name": "changed", "connection_type": "Windows",
		"credential_type": "Domain", "username": "u", "password": ""})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("domain"))
	require.NotEmpty(t, r.field("password"))
	r = f.do(t, "GET", fmt.Sprintf("/api/credentials/%d", id), admin, nil)
	require.Equal(t, "kept", r.Body["name"], "a refused update changes nothing")

	dup := f.do(t, "POST", "/api/credentials", admin, map[string]any{"name": "KEPT", "connection_type": "Windows",
		"credential_type": "Machine", "username": "u", "password": firstPassword})
	require.Equal(t, 409, dup.Status, dup.Raw)
	require.NotEmpty(t, dup.field("name"))

	for _, bad := range []string{"abc", "0", "-3"} {
		r = f.do(t, "GET", "/api/credentials/"+bad, admin, nil)
		require.Equal(t, 400, r.Status, r.Raw)
		require.NotEmpty(t, r.field("credential_id"))
	}
	r = f.do(t, "GET", "/api/credentials?site_id=x", admin, nil)
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("site_id"))
	r = f.do(t, "PUT", "/api/credentials/999999", admin, map[string]any{"name": "n", "connection_type": "Windows",
		"credential_type": "Machine", "username": "u"})
	require.Equal(t, 404, r.Status, r.Raw)
}

// A non-admin operator sees global credentials and those of their assigned
// sites; anything else answers exactly like a credential that does not
// exist. The site_id filter narrows to one site plus the global ones.
func TestCredentialSiteScope(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	operator := f.operator(t, "scoped-operator")
	siteA, siteB := f.createSite(t, admin, "scope-a"), f.createSite(t, admin, "scope-b")
	f.createCredential(t, admin, "global", nil)
	inA := f.createCredential(t, admin, "in a", siteA)
	inB := f.createCredential(t, admin, "in b", siteB)
	pathA, pathB := fmt.Sprintf("/api/credentials/%d", inA), fmt.Sprintf("/api/credentials/%d", inB)
	missing := f.do(t, "GET", "/api/credentials/999999", operator, nil)
	require.Equal(t, 404, missing.Status)

	require.Equal(t, []string{"global", "in a", "in b"}, credentialNames(t, f.do(t, "GET", "/api/credentials", admin, nil)))
	require.Equal(t, []string{"global", "in a"}, credentialNames(t, f.do(t, "GET", fmt.Sprintf("/api/credentials?site_id=%d", siteA), admin, nil)))

	require.Equal(t, []string{"global"}, credentialNames(t, f.do(t, "GET", "/api/credentials", operator, nil)))
	require.Equal(t, []string{"global"}, credentialNames(t, f.do(t, "GET", fmt.Sprintf("/api/credentials?site_id=%d", siteA), operator, nil)))
	hidden := f.do(t, "GET", pathA, operator, nil)
	require.Equal(t, 404, hidden.Status, hidden.Raw)
	require.Equal(t, missing.Body["error"], hidden.Body["error"])
	require.Equal(t, fmt.Sprintf("credential %d not found", inA), hidden.Body["message"])

	assigned := f.do(t, "POST", "/api/user_site_assignments/assign", admin, map[string]any{"usernames": []string{"scoped-operator"}, "site_ids": []int64{siteA}})
	require.Equal(t, 200, assigned.Status, assigned.Raw)

	require.Equal(t, []string{"global", "in a"}, credentialNames(t, f.do(t, "GET", "/api/credentials", operator, nil)))
	require.Equal(t, []string{"global"}, credentialNames(t, f.do(t, "GET", fmt.Sprintf("/api/credentials?site_id=%d", siteB), operator, nil)))
	visible := f.do(t, "GET", pathA, operator, nil)
	require.Equal(t, 200, visible.Status, visible.Raw)
	require.Equal(t, 404, f.do(t, "GET", pathB, operator, nil).Status)
	noSecrets(t, visible, hidden)

	// Deleting a site takes its credentials with it.
	r := f.do(t, "POST", "/api/sites/delete", admin, map[string]any{"site_ids": []int64{siteB}})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, []string{"global", "in a"}, credentialNames(t, f.do(t, "GET", "/api/credentials", admin, nil)))
}

// After a forced master-cipher reset (simulated here on the replica's
// cipher, as the aegis tests do) a credential still lists but is flagged,
// and revealing it says why it cannot.
func TestCredentialUnreadableAfterCipherReset(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	id := f.createCredential(t, admin, "old key", nil)
	ctx := context.Background()
	require.NoError(t, f.store.AegisStateDelete(ctx))
	f.engine.cipher.Lock()
	require.NoError(t, f.engine.cipher.Setup(ctx, "another long passphrase"))

	r := f.do(t, "GET", fmt.Sprintf("/api/credentials/%d", id), admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, credentials.StatusUnread, r.Body["secret_status"])
	_, err := f.engine.core.Credentials.Reveal(ctx, id, 1)
	require.ErrorContains(t, err, "sealed by a master cipher that was since reset")
}
