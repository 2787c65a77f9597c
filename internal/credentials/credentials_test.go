package credentials_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/credentials"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

type fixture struct {
	store  *db.Store
	cipher *aegis.Cipher
	svc    *credentials.Service
}

func setup(t *testing.T) *fixture {
	t.Helper()
	store := pgtest.NewDB(t)
	cipher := aegis.New(aegis.PGStore{Q: store.Queries}, authtest.CheapKDF)
	require.NoError(t, cipher.Setup(context.Background(), "correct horse battery staple"))
	return &fixture{store: store, cipher: cipher, svc: credentials.NewService(store, cipher)}
}

func (f *fixture) site(t *testing.T, slug string) int64 {
	t.Helper()
	s, err := f.store.SiteInsert(context.Background(), db.SiteInsertParams{Name: slug, Slug: slug})
	require.NoError(t, err)
	return int64(s.ID)
}

// forceReset does what POST /api/aegis/force_reset does to the cipher: the
// old data key is gone and a new setup creates another.
func (f *fixture) forceReset(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, f.store.AegisStateDelete(ctx))
	f.cipher.Lock()
	require.NoError(t, f.cipher.Setup(ctx, "a brand new passphrase"))
}

func ptr[T any](v T) *T { return &v }

func requireCode(t *testing.T, err error, code string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, cairn.ErrorCode(err), "%v", err)
}

func TestRevealDecryptsOnlyForTheRightSite(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	siteA, siteB := f.site(t, "site-a"), f.site(t, "site-b")
	global, err := f.svc.Create(ctx, credentials.Input{Name: "global", ConnectionType: "WinRM", CredentialType: "Domain",
		Username: "svc-winrm", Domain: "corp.example", Password: ptr("global secret pw")})
	require.NoError(t, err)
	scoped, err := f.svc.Create(ctx, credentials.Input{Name: "site a", ConnectionType: "Windows", CredentialType: "Machine",
		Username: "Administrator", Password: ptr("site a secret pw"), SiteID: (*cairn.SiteID)(&siteA)})
	require.NoError(t, err)

	sec, err := f.svc.Reveal(ctx, global.ID, cairn.SiteID(siteB))
	require.NoError(t, err)
	require.Equal(t, credentials.Secret{ConnectionType: "WinRM", CredentialType: "Domain", Username: "svc-winrm",
		Domain: "corp.example", Password: "global secret pw"}, sec)
	sec, err = f.svc.Reveal(ctx, scoped.ID, cairn.SiteID(siteA))
	require.NoError(t, err)
	require.Equal(t, "site a secret pw", sec.Password)

	_, err = f.svc.Reveal(ctx, scoped.ID, cairn.SiteID(siteB))
	requireCode(t, err, cairn.ECodeForbidden)
	_, err = f.svc.Reveal(ctx, 999999, cairn.SiteID(siteA))
	requireCode(t, err, cairn.ECodeNotFound)

	// The stored value is sealed: neither the password nor the plain text
	// appears in the row.
	row, err := f.store.CredentialGet(ctx, db.CredentialGetParams{ID: scoped.ID, AllSites: true})
	require.NoError(t, err)
	require.NotContains(t, string(row.PasswordSealed), "site a secret pw")
}

func TestUpdateWithoutPasswordKeepsIt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	site := f.site(t, "keep")
	c, err := f.svc.Create(ctx, credentials.Input{Name: "c", ConnectionType: "Windows", CredentialType: "Machine",
		Username: "u", Password: ptr("first password")})
	require.NoError(t, err)
	c, err = f.svc.Update(ctx, c.ID, credentials.Input{Name: "renamed", ConnectionType: "Windows", CredentialType: "Machine",
		Username: "u2", SiteID: (*cairn.SiteID)(&site)})
	require.NoError(t, err)
	require.Equal(t, "renamed", c.Name)
	sec, err := f.svc.Reveal(ctx, c.ID, cairn.SiteID(site))
	require.NoError(t, err)
	require.Equal(t, "first password", sec.Password)
	require.Equal(t, "u2", sec.Username)

	_, err = f.svc.Update(ctx, c.ID, credentials.Input{Name: "renamed", ConnectionType: "Windows", CredentialType: "Machine",
		Username: "u2", SiteID: (*cairn.SiteID)(&site), Password: ptr("second password")})
	require.NoError(t, err)
	sec, err = f.svc.Reveal(ctx, c.ID, cairn.SiteID(site))
	require.NoError(t, err)
	require.Equal(t, "second password", sec.Password)
}

func TestForceResetMakesCredentialsUnreadableUntilSetAgain(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	c, err := f.svc.Create(ctx, credentials.Input{Name: "old", ConnectionType: "Windows", CredentialType: "Machine",
		Username: "u", Password: ptr("sealed by the old key")})
	require.NoError(t, err)
	require.Equal(t, credentials.StatusOK, c.SecretStatus)

	f.forceReset(t)
	list, err := f.svc.List(ctx, credentials.Scope{AllSites: true}, nil)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, credentials.StatusUnread, list[0].SecretStatus)
	require.True(t, list[0].HasPassword)
	_, err = f.svc.Reveal(ctx, c.ID, 1)
	requireCode(t, err, cairn.ECodeConflict)
	require.Contains(t, err.Error(), "master cipher that was since reset")

	// Setting the password again under the new cipher repairs it.
	c, err = f.svc.Update(ctx, c.ID, credentials.Input{Name: "old", ConnectionType: "Windows", CredentialType: "Machine",
		Username: "u", Password: ptr("sealed by the new key")})
	require.NoError(t, err)
	require.Equal(t, credentials.StatusOK, c.SecretStatus)
	sec, err := f.svc.Reveal(ctx, c.ID, 1)
	require.NoError(t, err)
	require.Equal(t, "sealed by the new key", sec.Password)
}

func TestValidationNamesEveryBadField(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	_, err := f.svc.Create(ctx, credentials.Input{Name: " ", ConnectionType: "rdp", CredentialType: "local",
		Username: strings.Repeat("u", 257), Domain: "bad domain", Password: nil, SiteID: (*cairn.SiteID)(ptr(int64(424242)))})
	requireCode(t, err, cairn.ECodeValidation)
	fields := err.(*cairn.Error).Fields
	for _, name := range []string{"name", "connection_type", "credential_type", "username", "password", "site_id"} {
		require.Contains(t, fields, name)
	}

	cases := map[string]credentials.Input{
		"domain":   {Name: "n", ConnectionType: "WinRM", CredentialType: "Domain", Username: "u", Password: ptr("p")},
		"password": {Name: "n", ConnectionType: "WinRM", CredentialType: "Machine", Username: "u", Password: ptr("")},
		"username": {Name: "n", ConnectionType: "WinRM", CredentialType: "Machine", Username: "a\nb", Password: ptr("p")},
		"site_id":  {Name: "n", ConnectionType: "WinRM", CredentialType: "Machine", Username: "u", Password: ptr("p"), SiteID: (*cairn.SiteID)(ptr(int64(0)))},
	}
	for field, in := range cases {
		_, err := f.svc.Create(ctx, in)
		requireCode(t, err, cairn.ECodeValidation)
		require.Contains(t, err.(*cairn.Error).Fields, field, "%v", err)
	}
	machineWithDomain := credentials.Input{Name: "n", ConnectionType: "WinRM", CredentialType: "Machine", Username: "u",
		Domain: "corp", Password: ptr("p")}
	_, err = f.svc.Create(ctx, machineWithDomain)
	require.Contains(t, err.(*cairn.Error).Fields, "domain")

	list, err := f.svc.List(ctx, credentials.Scope{AllSites: true}, nil)
	require.NoError(t, err)
	require.Empty(t, list, "a refused create stores nothing")
}

func TestNamesAreUniquePerScope(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	site := f.site(t, "names")
	in := credentials.Input{Name: "Shared", ConnectionType: "Windows", CredentialType: "Machine", Username: "u", Password: ptr("p")}
	_, err := f.svc.Create(ctx, in)
	require.NoError(t, err)
	dup := in
	dup.Name = "shared"
	_, err = f.svc.Create(ctx, dup)
	requireCode(t, err, cairn.ECodeConflict)
	require.Contains(t, err.(*cairn.Error).Fields, "name")
	dup.SiteID = (*cairn.SiteID)(&site)
	_, err = f.svc.Create(ctx, dup)
	require.NoError(t, err, "the same name in another scope is fine")
	list, err := f.svc.List(ctx, credentials.Scope{AllSites: true}, nil)
	require.NoError(t, err)
	require.Len(t, list, 2, "the refused create left no half-written row")
}
