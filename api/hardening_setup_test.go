package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/auth"
)

// First-run setup is not for whoever reaches the port first: the steps
// that create the cipher and the first administrator answer 403
// setup_code_required without the code `cairn serve` printed (issue 13
// item 4), and an unconfirmed administrator is not replaced without it.
func TestFirstRunSetupRoutesNeedTheSetupCode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	code := f.setupCode(t)
	for _, body := range []map[string]any{
		{"passphrase": passphrase},
		{"passphrase": passphrase, "setup_code": ""},
		{"passphrase": passphrase, "setup_code": "AAAAA-AAAAA-AAAAA-AAAAA"},
	} {
		r := f.do(t, "POST", "/api/bootstrap/aegis/setup", "", body)
		require.Equal(t, 403, r.Status, r.Raw)
		require.Equal(t, "setup_code_required", r.Body["error"])
		require.NotContains(t, r.Raw, code)
	}
	require.Equal(t, "aegis_setup_required", f.do(t, "GET", "/api/bootstrap/state", "", nil).Body["phase"])

	r := f.do(t, "POST", "/api/bootstrap/aegis/setup", "", map[string]any{"passphrase": passphrase, "setup_code": code})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "admin_setup_required", r.Body["phase"])

	r = f.do(t, "POST", "/api/bootstrap/admin/setup", "", map[string]any{"username": "admin", "password": adminPassword})
	require.Equal(t, 403, r.Status, r.Raw)
	require.Equal(t, "setup_code_required", r.Body["error"])
	first := f.do(t, "POST", "/api/bootstrap/admin/setup", "", map[string]any{"username": "admin", "password": adminPassword, "setup_code": code})
	require.Equal(t, 200, first.Status, first.Raw)
	// Someone else repeating the step cannot replace the administrator.
	r = f.do(t, "POST", "/api/bootstrap/admin/setup", "", map[string]any{"username": "intruder", "password": adminPassword})
	require.Equal(t, 403, r.Status, r.Raw)
	require.Equal(t, "setup_code_required", r.Body["error"])
	secret := first.Body["mfa"].(map[string]any)["secret"].(string)
	r = f.do(t, "POST", "/api/bootstrap/admin/mfa/verify", "", map[string]any{"pending_token": first.Body["pending_token"], "code": f.totp(t, secret)})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "login_required", r.Body["phase"])

	// Single use: the code is gone with setup.
	hashes, err := f.store.SetupCodeHashes(t.Context())
	require.NoError(t, err)
	require.Empty(t, hashes)
	f.login(t, f.url, "admin", adminPassword, secret)
}

// A code any replica printed works on every replica: only its hash is
// kept, in PostgreSQL.
func TestSetupCodeOfOneReplicaWorksOnAnother(t *testing.T) {
	t.Parallel()
	f := setup(t)
	other := f.newEngine(t)
	code := f.setupCode(t)
	r := f.call(t, other.http.URL, "POST", "/api/bootstrap/aegis/setup", "", map[string]any{"passphrase": passphrase, "setup_code": code})
	require.Equal(t, 200, r.Status, r.Raw)
	var stored int
	hashes, err := f.store.SetupCodeHashes(t.Context())
	require.NoError(t, err)
	for _, h := range hashes {
		require.NotContains(t, string(h), code, "only hashes are stored")
		stored++
	}
	require.Equal(t, 1, stored)
}

// /api/aegis/unlock is a passphrase oracle that costs an Argon2
// derivation per try: administrators only, and budgeted (item 5).
func TestAegisUnlockIsForAdministratorsAndRateLimited(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	operator := f.operator(t, "unlock-operator")
	r := f.do(t, "POST", "/api/aegis/unlock", operator, map[string]any{"passphrase": passphrase})
	require.Equal(t, 403, r.Status, r.Raw)
	require.Equal(t, "forbidden", r.Body["error"])

	limited := false
	for i := 0; i <= auth.UnlockPerAddress.Limit && !limited; i++ {
		r = f.do(t, "POST", "/api/aegis/unlock", admin, map[string]any{"passphrase": "not the passphrase"})
		switch r.Status {
		case 429:
			limited = true
			require.Equal(t, "rate_limited", r.Body["error"])
		default:
			require.Equal(t, 401, r.Status, r.Raw)
			require.Equal(t, "invalid_passphrase", r.Body["error"])
		}
	}
	require.True(t, limited, "passphrase guesses are limited")
}

// Rotation, forced reset and passkey registration need the password and a
// fresh TOTP code again: a session token alone answers 403
// reauthentication_required (item 5).
func TestSensitiveActionsNeedReauthentication(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	rotate := map[string]any{"current_passphrase": passphrase, "new_passphrase": "a rotated passphrase"}
	reset := map[string]any{"confirm": "FORCE RESET"}
	good := f.reauth(t, admin)
	spent := good["totp_code"]
	require.Equal(t, 200, f.do(t, "POST", "/api/aegis/rotate", admin, with(rotate, good)).Status)
	rotate["current_passphrase"] = "a rotated passphrase"

	refused := func(path string, body map[string]any, why string) {
		t.Helper()
		r := f.do(t, "POST", path, admin, body)
		require.Equal(t, 403, r.Status, "%s %s: %s", why, path, r.Raw)
		require.Equal(t, "reauthentication_required", r.Body["error"], "%s %s", why, path)
	}
	for name, proof := range map[string]map[string]any{
		"password only":  {"password": adminPassword},
		"wrong password": {"password": "not my password!", "totp_code": f.reauth(t, admin)["totp_code"]},
		"wrong code":     {"password": adminPassword, "totp_code": "000000"},
		"replayed code":  {"password": adminPassword, "totp_code": spent},
	} {
		refused("/api/aegis/rotate", with(rotate, proof), name)
	}
	// Within the re-authentication budget (10 failures in 5 minutes).
	for _, call := range []struct {
		path string
		body map[string]any
	}{{"/api/aegis/rotate", rotate}, {"/api/aegis/force_reset", reset}, {"/api/auth/passkeys/register/options", nil}} {
		refused(call.path, call.body, "no proof")
		refused(call.path, with(call.body, map[string]any{"password": "not my password!"}), "wrong password")
	}
	// Nothing happened.
	require.Equal(t, "login_required", f.do(t, "GET", "/api/bootstrap/state", "", nil).Body["phase"])
	require.Equal(t, 200, f.do(t, "GET", "/api/auth/me", admin, nil).Status)
}

// A passkey assertion is the other way to re-authenticate; its ceremony
// belongs to the operator who started it and is single use.
func TestPasskeyReauthenticationForSensitiveActions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	a := newSoftAuthenticator(t)
	f.registerPasskey(t, admin, "Key", a)
	operator := f.operator(t, "reauth-operator")

	assertion := func(token string, counter uint32) map[string]any {
		r := f.do(t, "POST", "/api/auth/reauth/passkey/options", token, nil)
		require.Equal(t, 200, r.Status, r.Raw)
		opts := r.Body["options"].(map[string]any)
		require.NotEmpty(t, opts["allowCredentials"], "only the operator's own passkeys")
		return map[string]any{"ceremony_id": r.Body["ceremony_id"], "credential": a.get(t, opts, counter)}
	}
	r := f.do(t, "POST", "/api/auth/reauth/passkey/options", operator, nil)
	require.Equal(t, 403, r.Status, r.Raw)
	require.Equal(t, "reauthentication_required", r.Body["error"], "an operator without passkeys is told to use the password")

	rotate := map[string]any{"current_passphrase": passphrase, "new_passphrase": "a rotated passphrase"}
	proof := assertion(admin, 1)
	r = f.do(t, "POST", "/api/aegis/rotate", admin, with(rotate, map[string]any{"passkey": proof}))
	require.Equal(t, 200, r.Status, r.Raw)
	rotate["current_passphrase"] = "a rotated passphrase"
	rotate["new_passphrase"] = "rotated once more"
	r = f.do(t, "POST", "/api/aegis/rotate", admin, with(rotate, map[string]any{"passkey": proof}))
	require.Equal(t, 403, r.Status, "a ceremony is single use: %s", r.Raw)
	require.Equal(t, "reauthentication_required", r.Body["error"])

	r = f.do(t, "POST", "/api/aegis/rotate", admin, with(rotate, map[string]any{"passkey": assertion(admin, 2)}))
	require.Equal(t, 200, r.Status, r.Raw)
}
