package api_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBootstrapThroughTheAPI(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.do(t, "GET", "/api/bootstrap/state", "", nil)
	require.Equal(t, "aegis_setup_required", r.Body["phase"])
	r = f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": "admin", "password": adminPassword})
	require.Equal(t, 409, r.Status)
	require.Equal(t, "bootstrap_incomplete", r.Body["error"])
	r = f.do(t, "POST", "/api/bootstrap/admin/setup", "", map[string]any{"username": "admin", "password": adminPassword})
	require.Equal(t, 409, r.Status)
	require.Equal(t, "wrong_phase", r.Body["error"])
	r = f.do(t, "POST", "/api/bootstrap/aegis/setup", "", map[string]any{"passphrase": "short", "setup_code": f.setupCode(t)})
	require.Equal(t, 400, r.Status)
	require.NotEmpty(t, r.field("passphrase"))

	secret := f.bootstrap(t)
	require.Equal(t, "login_required", f.do(t, "GET", "/api/bootstrap/state", "", nil).Body["phase"])

	r = f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": "admin", "password": "wrong password!"})
	require.Equal(t, 401, r.Status)
	require.Equal(t, "invalid_credentials", r.Body["error"])
	r = f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": "admin", "password": adminPassword})
	require.Equal(t, 200, r.Status)
	require.Equal(t, true, r.Body["mfa_required"])
	require.Nil(t, r.Body["mfa_setup"])
	pending := r.Body["pending_token"]
	r = f.do(t, "POST", "/api/auth/mfa/verify", "", map[string]any{"pending_token": pending, "code": "000000"})
	require.Equal(t, 401, r.Status)
	require.Equal(t, "invalid_mfa_code", r.Body["error"])
	r = f.do(t, "POST", "/api/auth/mfa/verify", "", map[string]any{"pending_token": pending, "code": f.totp(t, secret)})
	require.Equal(t, 200, r.Status, r.Raw)
	token := r.Body["token"].(string)
	require.Equal(t, "admin", r.Body["user"].(map[string]any)["username"])

	me := f.do(t, "GET", "/api/auth/me", token, nil)
	require.Equal(t, 200, me.Status)
	require.Equal(t, true, me.Body["mfa_configured"])
	require.Equal(t, "local", me.Body["auth_source"])

	require.Equal(t, 204, f.do(t, "POST", "/api/auth/logout", token, nil).Status)
	require.Equal(t, 401, f.do(t, "GET", "/api/auth/me", token, nil).Status)
}

// Browsers authenticate with the HttpOnly cookie and must echo the CSRF
// token on changes; API clients with a bearer token need not.
func TestCookieSessionsNeedTheCSRFHeaderForChanges(t *testing.T) {
	t.Parallel()
	f := setup(t)
	secret := f.bootstrap(t)
	r := f.login(t, f.url, "admin", adminPassword, secret)
	cookies := map[string]*http.Cookie{}
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		cookies[c.Name] = c
	}
	session, csrf := cookies["__Host-cairn_session"], cookies["__Host-cairn_csrf"]
	require.NotNil(t, session)
	require.NotNil(t, csrf)
	require.True(t, session.HttpOnly)
	require.False(t, csrf.HttpOnly, "the console must read the CSRF cookie")
	require.Equal(t, http.SameSiteStrictMode, session.SameSite)

	send := func(method, path, body, csrfHeader string) response {
		req, err := http.NewRequest(method, f.url+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.AddCookie(session)
		if csrfHeader != "" {
			req.Header.Set("X-CSRF-Token", csrfHeader)
		}
		return do(t, req)
	}
	require.Equal(t, 200, send("GET", "/api/auth/me", "", "").Status)
	site := `{"name":"Cookie site","site_worker_slug":"` + uniqueSlug("cookie") + `"}`
	r = send("POST", "/api/sites", site, "")
	require.Equal(t, 403, r.Status)
	require.Equal(t, "csrf_failed", r.Body["error"])
	r = send("POST", "/api/sites", site, "not-the-token")
	require.Equal(t, 403, r.Status)
	r = send("POST", "/api/sites", site, csrf.Value)
	require.Equal(t, 201, r.Status, r.Raw)
}

// A restarted replica holds no cipher key: operator routes answer 423 until
// it is unlocked, though the session itself is still valid.
func TestLockedReplicaAnswers423(t *testing.T) {
	t.Parallel()
	f := setup(t)
	token := f.admin(t)
	restarted := f.newEngine(t)
	base := restarted.http.URL

	// Anonymous is 401 whatever the cipher's state (SPEC Errors); only
	// login and signed-in operators learn that the replica is locked.
	r := f.call(t, base, "GET", "/api/auth/me", "", nil)
	require.Equal(t, 401, r.Status, r.Raw)
	r = f.call(t, base, "POST", "/api/sites", "not-a-session", map[string]any{"name": "x"})
	require.Equal(t, 401, r.Status, r.Raw)
	r = f.call(t, base, "GET", "/api/auth/me", token, nil)
	require.Equal(t, 423, r.Status)
	require.Equal(t, "aegis_locked", r.Body["error"])
	r = f.call(t, base, "POST", "/api/auth/login", "", map[string]any{"username": "admin", "password": adminPassword})
	require.Equal(t, 423, r.Status)
	require.Equal(t, "aegis_unlock_required", f.call(t, base, "GET", "/api/bootstrap/state", "", nil).Body["phase"])

	r = f.call(t, base, "POST", "/api/bootstrap/aegis/unlock", "", map[string]any{"passphrase": "the wrong passphrase"})
	require.Equal(t, 401, r.Status)
	require.Equal(t, "invalid_passphrase", r.Body["error"])
	r = f.call(t, base, "POST", "/api/bootstrap/aegis/unlock", "", map[string]any{"passphrase": passphrase})
	require.Equal(t, 200, r.Status)
	require.Equal(t, "login_required", r.Body["phase"])
	require.Equal(t, 200, f.call(t, base, "GET", "/api/auth/me", token, nil).Status)
}

func TestAegisStatusRotateAndForceReset(t *testing.T) {
	t.Parallel()
	f := setup(t)
	token := f.admin(t)
	operator := f.operator(t, "aegis-operator")

	st := f.do(t, "GET", "/api/aegis/status", token, nil)
	require.Equal(t, 200, st.Status)
	require.Equal(t, true, st.Body["configured"])
	require.Equal(t, true, st.Body["unlocked"])
	require.Equal(t, "argon2id", st.Body["kdf"].(map[string]any)["algorithm"])
	require.NotContains(t, st.Raw, passphrase)

	r := f.do(t, "POST", "/api/aegis/setup", token, map[string]any{"passphrase": passphrase})
	require.Equal(t, 409, r.Status)
	require.Equal(t, "aegis_already_configured", r.Body["error"])
	rotate := map[string]any{"current_passphrase": passphrase, "new_passphrase": "a rotated passphrase"}
	r = f.do(t, "POST", "/api/aegis/rotate", operator, with(rotate, f.reauth(t, operator)))
	require.Equal(t, 403, r.Status)
	require.Equal(t, "forbidden", r.Body["error"])
	r = f.do(t, "POST", "/api/aegis/rotate", token, with(rotate, f.reauth(t, token)))
	require.Equal(t, 200, r.Status, r.Raw)
	require.NotNil(t, r.Body["rotated_at"])

	r = f.do(t, "POST", "/api/aegis/force_reset", token, map[string]any{"confirm": "yes"})
	require.Equal(t, 400, r.Status)
	require.NotEmpty(t, r.field("confirm"))
	reset := map[string]any{"confirm": "FORCE RESET"}
	r = f.do(t, "POST", "/api/aegis/force_reset", operator, with(reset, f.reauth(t, operator)))
	require.Equal(t, 403, r.Status)
	require.Equal(t, "forbidden", r.Body["error"])
	r = f.do(t, "POST", "/api/aegis/force_reset", token, with(reset, f.reauth(t, token)))
	require.Equal(t, 200, r.Status, r.Raw)
	require.NotEmpty(t, r.Body["recovery_code"])
	require.NotEmpty(t, r.Body["setup_code"])
	require.Equal(t, "aegis_setup_required", f.do(t, "GET", "/api/bootstrap/state", "", nil).Body["phase"])
	require.NotEqual(t, 200, f.do(t, "GET", "/api/auth/me", token, nil).Status)
}

// A cipher reset on one replica locks every other replica at once, so none
// keeps sealing with a key that no longer exists.
func TestForceResetLocksOtherReplicas(t *testing.T) {
	t.Parallel()
	f := setup(t)
	token := f.admin(t)
	other := f.newEngine(t)
	r := f.call(t, other.http.URL, "POST", "/api/bootstrap/aegis/unlock", "", map[string]any{"passphrase": passphrase})
	require.Equal(t, 200, r.Status, r.Raw)
	require.True(t, other.cipher.Unlocked())

	r = f.do(t, "POST", "/api/aegis/force_reset", token, with(map[string]any{"confirm": "FORCE RESET"}, f.reauth(t, token)))
	require.Equal(t, 200, r.Status, r.Raw)
	require.Eventually(t, func() bool { return !other.cipher.Unlocked() }, 10*time.Second, 50*time.Millisecond)
}

// Rotation replaces the data key (issue 13 item 14): every sealed value
// (operator password and TOTP, stored credential, enrollment code, server
// keys) is re-sealed under the new key, the Engine keeps working with all
// of them, and a replica holding the old key locks itself.
func TestAegisRotateReSealsEverySecret(t *testing.T) {
	t.Parallel()
	f := setup(t)
	secret := f.bootstrap(t)
	admin := f.login(t, f.url, "admin", adminPassword, secret).Body["token"].(string)
	credID := f.createCredential(t, admin, "rotated", nil)
	siteID := f.createSite(t, admin, "rotation")
	code := f.enrollmentCode(t, admin, siteID)
	other := f.newEngine(t)
	r := f.call(t, other.http.URL, "POST", "/api/bootstrap/aegis/unlock", "", map[string]any{"passphrase": passphrase})
	require.Equal(t, 200, r.Status, r.Raw)
	ctx := context.Background()
	oldKey := f.engine.cipher.KeyID()

	r = f.do(t, "POST", "/api/aegis/rotate", admin, with(map[string]any{"current_passphrase": passphrase, "new_passphrase": "a rotated passphrase"}, f.reauth(t, admin)))
	require.Equal(t, 200, r.Status, r.Raw)
	newKey := f.engine.cipher.KeyID()
	require.NotEqual(t, oldKey, newKey)
	require.Eventually(t, func() bool { return !other.cipher.Unlocked() }, 30*time.Second, 20*time.Millisecond,
		"a replica holding the replaced data key locks itself")

	sealedBy := func(v []byte) []byte { return v[1:9] }
	users, err := f.store.UserSealedList(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, users)
	for _, u := range users {
		require.Equal(t, newKey, sealedBy(u.PasswordSealed), u.Username)
		require.Equal(t, newKey, sealedBy(u.TotpSealed), u.Username)
	}
	creds, err := f.store.StoredCredentialSealedList(ctx)
	require.NoError(t, err)
	require.Len(t, creds, 1)
	require.Equal(t, newKey, sealedBy(creds[0].PasswordSealed))
	codes, err := f.store.EnrollmentCodeSealedList(ctx)
	require.NoError(t, err)
	require.Len(t, codes, 1)
	require.Equal(t, newKey, sealedBy(codes[0].CodeSealed))
	keys, err := f.store.ServerKeySealedList(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, keys, "the pending-MFA key was created by the logins")
	for _, k := range keys {
		require.Equal(t, newKey, sealedBy(k.KeySealed), k.Name)
	}

	// Everything still opens: a fresh sign-in (password, TOTP, pending
	// token), the credential, the enrollment code.
	f.login(t, f.url, "admin", adminPassword, secret)
	plain, err := f.engine.core.Credentials.Reveal(ctx, credID, 1)
	require.NoError(t, err)
	require.Equal(t, firstPassword, plain.Password)
	r = f.do(t, "GET", "/api/admin/enrollment-codes?site_id="+strconv.FormatInt(siteID, 10), admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Contains(t, r.Raw, code)
	r = f.call(t, other.http.URL, "POST", "/api/bootstrap/aegis/unlock", "", map[string]any{"passphrase": "a rotated passphrase"})
	require.Equal(t, 200, r.Status, r.Raw)
}
