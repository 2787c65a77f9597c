package api_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// exportBackup downloads the backup with token.
func (f *fixture) exportBackup(t *testing.T, token string) []byte {
	t.Helper()
	req, err := http.NewRequest("GET", f.url+"/api/server/backup/export", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode, "%s", b)
	require.Contains(t, res.Header.Get("Content-Disposition"), "attachment; filename=\"cairn-backup-")
	return b
}

// uploadBackup posts a multipart backup form.
func (f *fixture) uploadBackup(t *testing.T, path, token string, fields map[string]string, file []byte) response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		require.NoError(t, mw.WriteField(k, v))
	}
	if file != nil {
		fw, err := mw.CreateFormFile("file", "backup.json")
		require.NoError(t, err)
		_, _ = fw.Write(file)
	}
	require.NoError(t, mw.Close())
	req, err := http.NewRequest("POST", f.url+path, &buf)
	require.NoError(t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, req)
}

// A running Engine restores its own backup through the restore:<id>
// workflow: what was added since is gone (no merge), every operator is
// signed out, the cipher is locked, and the answer asks for a restart.
func TestServerBackupRestore(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	f.createSite(t, admin, "kept")
	before := f.do(t, "GET", "/api/sites", admin, nil)
	require.Equal(t, 200, before.Status)
	file := f.exportBackup(t, admin)
	f.createSite(t, admin, "dropped")

	// Analyze changes nothing and counts.
	r := f.uploadBackup(t, "/api/server/backup/analyze", admin, nil, file)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, true, r.Body["restorable"], r.Raw)
	rows := map[string]float64{}
	for _, tb := range r.Body["tables"].([]any) {
		m := tb.(map[string]any)
		rows[m["name"].(string)] = m["rows"].(float64)
	}
	require.EqualValues(t, 1, rows["users"])
	require.EqualValues(t, 1, rows["aegis_state"])
	require.NotContains(t, rows, "sessions")

	// An operator may not; the confirmation must be exact; the bootstrap
	// routes are closed on a set-up Engine.
	op := f.operator(t, "backup-operator")
	require.Equal(t, 403, f.uploadBackup(t, "/api/server/backup/analyze", op, nil, file).Status)
	require.Equal(t, 403, f.do(t, "GET", "/api/server/backup/export", op, nil).Status)
	r = f.uploadBackup(t, "/api/server/backup/restore", admin, map[string]string{"confirmation": "restore engine config backup"}, file)
	require.Equal(t, 400, r.Status, r.Raw)
	require.Equal(t, "validation_failed", r.Body["error"])
	require.NotEmpty(t, r.field("confirmation"))
	r = f.uploadBackup(t, "/api/server/backup/restore", admin, map[string]string{"confirmation": "RESTORE ENGINE CONFIG BACKUP"}, nil)
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("file"))
	r = f.uploadBackup(t, "/api/bootstrap/backup/restore", "", map[string]string{"confirmation": "RESTORE ENGINE CONFIG BACKUP",
		"passphrase": passphrase, "setup_code": "AAAAA-BBBBB-CCCCC-DDDDD"}, file)
	require.GreaterOrEqual(t, r.Status, 400, r.Raw)
	require.Less(t, r.Status, 500, r.Raw)
	require.Equal(t, 200, f.do(t, "GET", "/api/sites", admin, nil).Status, "nothing was restored")

	r = f.uploadBackup(t, "/api/server/backup/restore", admin, map[string]string{"confirmation": "RESTORE ENGINE CONFIG BACKUP"}, file)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, true, r.Body["restart_required"])
	require.Equal(t, "aegis_unlock_required", r.Body["phase"])
	require.NotEmpty(t, r.Body["restore_id"])
	cleared := false
	for _, c := range r.Header.Values("Set-Cookie") {
		cleared = cleared || bytes.Contains([]byte(c), []byte("Max-Age=0"))
	}
	require.True(t, cleared, "the cookies are cleared")
	require.False(t, f.engine.cipher.Unlocked(), "the in-memory key is gone")

	// Every session ended; after the unlock the operator signs in again
	// and sees the backup's sites only.
	require.Equal(t, 401, f.do(t, "GET", "/api/sites", admin, nil).Status)
	require.Equal(t, 401, f.do(t, "GET", "/api/sites", op, nil).Status)
	r = f.do(t, "POST", "/api/bootstrap/aegis/unlock", "", map[string]any{"passphrase": passphrase})
	require.Equal(t, 200, r.Status, r.Raw)
	admin2 := f.login(t, f.url, "admin", adminPassword, f.secretOf(t, admin)).Body["token"].(string)
	after := f.do(t, "GET", "/api/sites", admin2, nil)
	require.Equal(t, before.Body, after.Body)
	// The operator created after the export is gone.
	r = f.call(t, f.url, "POST", "/api/auth/login", "", map[string]any{"username": "backup-operator", "password": "operator password 1"})
	require.Equal(t, 401, r.Status, r.Raw)
}

// Export needs the unlocked cipher; analyze refuses garbage.
func TestServerBackupRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	r := f.uploadBackup(t, "/api/server/backup/analyze", admin, nil, []byte(`{"kind":"something else"}`))
	require.Equal(t, 400, r.Status, r.Raw)
	require.Equal(t, "backup_malformed", r.Body["error"])
	r = f.do(t, "POST", "/api/server/backup/analyze", admin, map[string]any{"file": "x"})
	require.Equal(t, 400, r.Status, r.Raw)
	require.Equal(t, "validation_failed", r.Body["error"])
	f.engine.cipher.Lock()
	r = f.do(t, "GET", "/api/server/backup/export", admin, nil)
	require.Equal(t, 423, r.Status, r.Raw)
}

// Disaster recovery onto a fresh Engine (its own database): the bootstrap
// routes need the setup code and the source passphrase, restore the
// source's operators and cipher, and close once the restore is done.
func TestBootstrapBackupRestore(t *testing.T) {
	t.Parallel()
	src := setup(t)
	admin := src.admin(t)
	src.createSite(t, admin, "dr")
	sites := src.do(t, "GET", "/api/sites", admin, nil)
	file := src.exportBackup(t, admin)
	secret := src.secretOf(t, admin)

	f := setup(t)
	code := f.setupCode(t)
	form := func(more map[string]string) map[string]string {
		m := map[string]string{"passphrase": passphrase, "setup_code": code}
		for k, v := range more {
			m[k] = v
		}
		return m
	}
	r := f.uploadBackup(t, "/api/bootstrap/backup/analyze", "", form(map[string]string{"setup_code": "AAAAA-BBBBB-CCCCC-DDDDD"}), file)
	require.Equal(t, 403, r.Status, r.Raw)
	// The setup code must come before the file: without it the upload is
	// not read.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("file", "backup.json")
	require.NoError(t, err)
	_, _ = fw.Write(file)
	require.NoError(t, mw.WriteField("passphrase", passphrase))
	require.NoError(t, mw.WriteField("setup_code", code))
	require.NoError(t, mw.Close())
	req, err := http.NewRequest("POST", f.url+"/api/bootstrap/backup/analyze", &buf)
	require.NoError(t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	r = do(t, req)
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("passphrase"))
	r = f.uploadBackup(t, "/api/bootstrap/backup/analyze", "", form(map[string]string{"passphrase": ""}), file)
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("passphrase"))
	r = f.uploadBackup(t, "/api/bootstrap/backup/analyze", "", form(nil), file)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, true, r.Body["restorable"], r.Raw)
	r = f.do(t, "GET", "/api/bootstrap/state", "", nil)
	require.Equal(t, "aegis_setup_required", r.Body["phase"], "analyze changed nothing")

	r = f.uploadBackup(t, "/api/bootstrap/backup/restore", "", form(map[string]string{"confirmation": "RESTORE ENGINE CONFIG BACKUP"}), file)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "aegis_unlock_required", r.Body["phase"])
	require.Equal(t, true, r.Body["restart_required"])
	r = f.uploadBackup(t, "/api/bootstrap/backup/restore", "", form(map[string]string{"confirmation": "RESTORE ENGINE CONFIG BACKUP"}), file)
	require.Equal(t, 409, r.Status, "a restored Engine is no longer fresh: %s", r.Raw)

	r = f.do(t, "POST", "/api/bootstrap/aegis/unlock", "", map[string]any{"passphrase": passphrase})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "login_required", r.Body["phase"])
	f.clk.Advance(10 * time.Minute) // past the codes the source spent
	token := f.login(t, f.url, "admin", adminPassword, secret).Body["token"].(string)
	require.Equal(t, sites.Body, f.do(t, "GET", "/api/sites", token, nil).Body)
}
