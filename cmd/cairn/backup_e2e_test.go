package main

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/authtest"
)

// Issue 26's test that matters: a populated Engine with a real enrolled
// cairn-agent is exported, and the backup is restored onto a fresh Engine
// (its own PostgreSQL, its own Temporal) through the bootstrap routes. The
// restored Engine is restarted as the answer asks, unlocked with the
// source passphrase; the operator signs in with the source's password and
// TOTP, sees what was exported and nothing that was excluded, and the
// same agent process reconnects without enrolling again and answers an
// operation.
func TestBackupRestoreOntoAFreshEngine(t *testing.T) {
	t.Parallel()
	tmp, agentBin := agentWorkspace(t, "cairn-backup-e2e-")
	httpPort, httpsPort := freePort(t), freePort(t)
	src := startServeAt(t, filepath.Join(tmp, "source"), httpPort, httpsPort, "CAIRN_DEVICE_ONLINE_WINDOW=30s")
	token, secret, used := signInSecret(t, src)

	site := src.post(t, "/api/sites", token, map[string]any{"name": "Backup", "site_worker_slug": "backup"})
	code := src.post(t, "/api/admin/enrollment-codes", token, map[string]any{"site_id": site["site_id"]})["code"].(string)
	// Over HTTPS with the source's local CA pinned: the restored Engine
	// must serve from the same CA.
	caFile := filepath.Join(tmp, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, src.checkHTTPS(t), 0o644))
	ag := src.enrollAgent(t, token, agentBin, tmp, "backup-agent", code, caFile)
	ag.run(t, agentBin)
	src.waitStatus(t, token, ag, "Connected", 90*time.Second)

	// Content that rule 4 exports, and a saved view it excludes.
	src.post(t, "/api/credentials", token, map[string]any{"name": "Backup machine", "connection_type": "Windows",
		"credential_type": "Machine", "username": "Administrator", "password": "backup credential secret", "site_id": site["site_id"]})
	src.post(t, "/api/device_filters", token, map[string]any{"name": "Backup hosts", "filter": map[string]any{"match": "all",
		"conditions": []any{map[string]any{"field": "hostname", "op": "starts_with", "value": "backup"}}}})
	src.call(t, "PUT", "/api/metadata_fields/11", token, map[string]any{"description": "Asset tag"})
	src.post(t, "/api/device_list_views", token, map[string]any{"name": "My grid", "columns": []string{"hostname"}})
	want := map[string]any{}
	for _, path := range []string{"/api/sites", "/api/credentials", "/api/device_filters", "/api/metadata_fields"} {
		want[path] = src.call(t, "GET", path, token, nil)
	}
	device := src.call(t, "GET", "/api/devices/"+ag.cfg.Agent.GUID, token, nil)

	// Export.
	file := download(t, src, "/api/server/backup/export", token)
	require.NotContains(t, string(file), "backup credential secret")
	require.NotContains(t, string(file), ag.hostname)
	src.stop(t)

	// A fresh Engine on the same address (the agent knows no other).
	dataB := filepath.Join(tmp, "restored")
	dst := startServeAt(t, dataB, httpPort, httpsPort, "CAIRN_DEVICE_ONLINE_WINDOW=30s")
	setup := dst.setupCode(t)
	form := map[string]string{"passphrase": "e2e test passphrase", "setup_code": setup}

	// Analyze: counts, nothing changed.
	status, body := upload(t, dst, "/api/bootstrap/backup/analyze", form, file)
	require.Equal(t, 200, status, body)
	var rep struct {
		Restorable bool `json:"restorable"`
		Tables     []struct {
			Name string `json:"name"`
			Rows int64  `json:"rows"`
		} `json:"tables"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &rep))
	require.True(t, rep.Restorable, body)
	counts := map[string]int64{}
	for _, tb := range rep.Tables {
		counts[tb.Name] = tb.Rows
	}
	require.EqualValues(t, 1, counts["devices"])
	require.EqualValues(t, 1, counts["refresh_tokens"], "only the agent's latest active refresh token")
	require.EqualValues(t, 1, counts["stored_credentials"])
	require.Equal(t, "aegis_setup_required", dst.call(t, "GET", "/api/bootstrap/state", "", nil)["phase"], "analyze changed nothing")

	// Refusals: a wrong passphrase, no confirmation.
	status, body = upload(t, dst, "/api/bootstrap/backup/restore", map[string]string{"passphrase": "not the passphrase at all",
		"setup_code": setup, "confirmation": "RESTORE ENGINE CONFIG BACKUP"}, file)
	require.Equal(t, 400, status, body)
	require.Contains(t, body, "backup_wrong_cipher")
	status, body = upload(t, dst, "/api/bootstrap/backup/restore", form, file)
	require.Equal(t, 400, status, body)
	require.Contains(t, body, "confirmation")

	// Restore.
	form["confirmation"] = "RESTORE ENGINE CONFIG BACKUP"
	status, body = upload(t, dst, "/api/bootstrap/backup/restore", form, file)
	require.Equal(t, 200, status, body)
	var restored struct {
		RestartRequired bool     `json:"restart_required"`
		Phase           string   `json:"phase"`
		Files           []string `json:"files"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &restored))
	require.Equal(t, []string{"tls/ca-key.pem", "tls/ca.pem"}, restored.Files)
	require.True(t, restored.RestartRequired)
	require.Equal(t, "aegis_unlock_required", restored.Phase)
	// The bootstrap routes are closed to a second restore.
	status, _ = upload(t, dst, "/api/bootstrap/backup/restore", form, file)
	require.GreaterOrEqual(t, status, 400)

	// Restart as asked, unlock with the source passphrase, sign in as the
	// source's operator (password and TOTP).
	dst.stop(t)
	dst = startServeAt(t, dataB, httpPort, httpsPort, "CAIRN_DEVICE_ONLINE_WINDOW=30s")
	require.Equal(t, string(must(os.ReadFile(caFile))), string(dst.checkHTTPS(t)), "the restored Engine serves from the source's CA")
	require.Equal(t, "login_required", dst.post(t, "/api/bootstrap/aegis/unlock", "", map[string]any{"passphrase": "e2e test passphrase"})["phase"])
	login := dst.post(t, "/api/auth/login", "", map[string]any{"username": "admin", "password": "e2e test password"})
	// The restored account keeps its last accepted TOTP step (replay
	// protection survives a restore), and the source signed in with the
	// next step, taken early: a code is accepted only for a newer step,
	// within one step of the clock, so the clock must have reached the
	// step the source used.
	require.Eventually(t, func() bool { return time.Now().Unix()/30 >= used.Unix()/30 }, time.Minute, 100*time.Millisecond)
	sess := dst.post(t, "/api/auth/mfa/verify", "", map[string]any{"pending_token": login["pending_token"],
		"code": totpAfter(t, secret, used)})
	token2 := sess["token"].(string)
	// The source's session is not a session here.
	require.Equal(t, 401, dst.rawCall(t, "GET", "/api/sites", token, nil).status)

	for path, v := range want {
		require.Equal(t, v, dst.call(t, "GET", path, token2, nil), path)
	}
	got := dst.call(t, "GET", "/api/devices/"+ag.cfg.Agent.GUID, token2, nil)
	for _, k := range []string{"guid", "hostname", "site_id", "trust_state"} {
		require.Equal(t, device[k], got[k], k)
	}
	require.Empty(t, dst.call(t, "GET", "/api/admin/device-approvals?status=pending", token2, nil)["approvals"])
	// Excluded: saved views, the audit trail of the source.
	require.Empty(t, dst.call(t, "GET", "/api/device_list_views", token2, nil)["views"])
	for _, e := range dst.call(t, "GET", "/api/server/audit", token2, nil)["entries"].([]any) {
		require.NotEqual(t, "POST /api/sites", e.(map[string]any)["action"], "the source's audit trail is not restored")
	}

	// The same agent process reconnects, without enrolling again, and
	// answers an operation.
	dst.waitStatus(t, token2, ag, "Connected", 3*time.Minute)
	procs := dst.call(t, "GET", "/api/device/processes/"+ag.hostname+"?max_age_seconds=0", token2, nil)
	if url, ok := procs["url"].(string); ok {
		// The operation outlived the request's wait on a loaded machine
		// (202, issue 27): follow it, then read the snapshot it stored.
		require.Eventually(t, func() bool { return dst.call(t, "GET", url, token2, nil)["status"] != "running" }, 3*time.Minute, time.Second)
		require.Equal(t, "completed", dst.call(t, "GET", url, token2, nil)["status"])
		procs = dst.call(t, "GET", "/api/device/processes/"+ag.hostname, token2, nil)
	}
	require.NotEmpty(t, procs["processes"], "%v", procs)
	after := loadAgentConfigFresh(t, ag.dir)
	require.Equal(t, ag.cfg.Agent.GUID, after.Agent.GUID, "the agent kept its identity")
	require.NotContains(t, ag.output(), "device_purged")
	require.Empty(t, dst.call(t, "GET", "/api/admin/device-approvals?status=pending", token2, nil)["approvals"], "no new enrollment request")
}

// signInSecret is signIn that also returns the administrator's TOTP secret.
func signInSecret(t *testing.T, p *proc) (token, secret string, used time.Time) {
	t.Helper()
	code := p.setupCode(t)
	p.post(t, "/api/bootstrap/aegis/setup", "", map[string]any{"passphrase": "e2e test passphrase", "setup_code": code})
	setup := p.post(t, "/api/bootstrap/admin/setup", "", map[string]any{"username": "admin", "password": "e2e test password", "setup_code": code})
	secret = setup["mfa"].(map[string]any)["secret"].(string)
	now := time.Now()
	p.post(t, "/api/bootstrap/admin/mfa/verify", "", map[string]any{"pending_token": setup["pending_token"], "code": authtest.TOTP(t, secret, now)})
	login := p.post(t, "/api/auth/login", "", map[string]any{"username": "admin", "password": "e2e test password"})
	used = now.Add(30 * time.Second)
	sess := p.post(t, "/api/auth/mfa/verify", "", map[string]any{"pending_token": login["pending_token"], "code": authtest.TOTP(t, secret, used)})
	return sess["token"].(string), secret, used
}

func download(t *testing.T, p *proc, path, token string) []byte {
	t.Helper()
	req, err := http.NewRequest("GET", p.base+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode, "%s", b)
	require.True(t, strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment"))
	return b
}

func upload(t *testing.T, p *proc, path string, fields map[string]string, file []byte) (int, string) {
	t.Helper()
	status, body, err := uploadRaw(p, path, "", fields, file)
	require.NoError(t, err)
	return status, body
}

// uploadRaw posts a multipart backup form (token "": none).
func uploadRaw(p *proc, path, token string, fields map[string]string, file []byte) (int, string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	fw, _ := mw.CreateFormFile("file", "backup.json")
	_, _ = fw.Write(file)
	_ = mw.Close()
	req, err := http.NewRequest("POST", p.base+path, &buf)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), nil
}
