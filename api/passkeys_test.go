package api_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/passkeys"
	"github.com/cairn-rmm/cairn/internal/slapdtest"
)

// softAuthenticator is a software WebAuthn authenticator holding one
// discoverable ES256 credential: enough of CTAP2 to run the ceremonies over
// HTTP the way a browser would, with "none" attestation.
type softAuthenticator struct {
	rpID    string
	origin  string
	key     *ecdsa.PrivateKey
	credID  []byte
	handle  []byte
	counter uint32
}

func newSoftAuthenticator(t *testing.T) *softAuthenticator {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	return &softAuthenticator{rpID: "cairn.example.test", origin: testPublicURL, key: key, credID: id}
}

var b64 = base64.RawURLEncoding

const (
	flagUP = 0x01
	flagUV = 0x04
	flagAT = 0x40
)

func (a *softAuthenticator) authData(flags byte, counter uint32, attested []byte) []byte {
	rpHash := sha256.Sum256([]byte(a.rpID))
	out := append(rpHash[:], flags)
	out = binary.BigEndian.AppendUint32(out, counter)
	return append(out, attested...)
}

func (a *softAuthenticator) clientData(t *testing.T, typ, challenge string) []byte {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"type": typ, "challenge": challenge, "origin": a.origin, "crossOrigin": false})
	require.NoError(t, err)
	return raw
}

// create answers navigator.credentials.create for options.
func (a *softAuthenticator) create(t *testing.T, options map[string]any) map[string]any {
	t.Helper()
	enc, err := cbor.CoreDetEncOptions().EncMode()
	require.NoError(t, err)
	user := options["user"].(map[string]any)
	a.handle, err = b64.DecodeString(user["id"].(string))
	require.NoError(t, err)
	require.Equal(t, a.rpID, options["rp"].(map[string]any)["id"])

	pub := a.key.PublicKey
	ecdh, err := pub.ECDH()
	require.NoError(t, err)
	point := ecdh.Bytes() // 0x04 || X || Y
	coseKey, err := enc.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: point[1:33], -3: point[33:65]})
	require.NoError(t, err)
	attested := make([]byte, 16) // AAGUID: zero, as with "none" attestation
	attested = binary.BigEndian.AppendUint16(attested, uint16(len(a.credID)))
	attested = append(attested, a.credID...)
	attested = append(attested, coseKey...)
	attObj, err := enc.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{},
		"authData": a.authData(flagUP|flagUV|flagAT, a.counter, attested)})
	require.NoError(t, err)
	return map[string]any{"id": b64.EncodeToString(a.credID), "rawId": b64.EncodeToString(a.credID), "type": "public-key",
		"response": map[string]any{
			"clientDataJSON":    b64.EncodeToString(a.clientData(t, "webauthn.create", options["challenge"].(string))),
			"attestationObject": b64.EncodeToString(attObj),
		}}
}

// get answers navigator.credentials.get for options, reporting counter.
func (a *softAuthenticator) get(t *testing.T, options map[string]any, counter uint32) map[string]any {
	t.Helper()
	cd := a.clientData(t, "webauthn.get", options["challenge"].(string))
	ad := a.authData(flagUP|flagUV, counter, nil)
	cdHash := sha256.Sum256(cd)
	digest := sha256.Sum256(append(append([]byte{}, ad...), cdHash[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, a.key, digest[:])
	require.NoError(t, err)
	return map[string]any{"id": b64.EncodeToString(a.credID), "rawId": b64.EncodeToString(a.credID), "type": "public-key",
		"response": map[string]any{
			"clientDataJSON":    b64.EncodeToString(cd),
			"authenticatorData": b64.EncodeToString(ad),
			"signature":         b64.EncodeToString(sig),
			"userHandle":        b64.EncodeToString(a.handle),
		}}
}

// registerPasskey runs the registration ceremony for token's operator.
func (f *fixture) registerPasskey(t *testing.T, token, label string, a *softAuthenticator) int64 {
	t.Helper()
	r := f.do(t, "POST", "/api/auth/passkeys/register/options", token, f.reauth(t, token))
	require.Equal(t, 200, r.Status, r.Raw)
	opts := r.Body["options"].(map[string]any)
	sel := opts["authenticatorSelection"].(map[string]any)
	require.Equal(t, "required", sel["residentKey"])
	require.Equal(t, "required", sel["userVerification"])
	require.Equal(t, "none", opts["attestation"])
	r = f.do(t, "POST", "/api/auth/passkeys/register/verify", token, map[string]any{
		"ceremony_id": r.Body["ceremony_id"], "label": label, "credential": a.create(t, opts)})
	require.Equal(t, 201, r.Status, r.Raw)
	require.Equal(t, strings.TrimSpace(label), r.Body["label"])
	return int64(r.Body["id"].(float64))
}

// passkeySignIn runs the sign-in ceremony with counter and returns the answer.
func (f *fixture) passkeySignIn(t *testing.T, a *softAuthenticator, counter uint32) response {
	t.Helper()
	r := f.do(t, "POST", "/api/auth/passkeys/authenticate/options", "", nil)
	require.Equal(t, 200, r.Status, r.Raw)
	opts := r.Body["options"].(map[string]any)
	require.Equal(t, "cairn.example.test", opts["rpId"])
	require.Empty(t, opts["allowCredentials"], "sign-in is usernameless")
	return f.do(t, "POST", "/api/auth/passkeys/authenticate/verify", "", map[string]any{
		"ceremony_id": r.Body["ceremony_id"], "credential": a.get(t, opts, counter)})
}

func TestPasskeyRegisterSignInRenameAndRemove(t *testing.T) {
	t.Parallel()
	f := setup(t)
	token := f.sudo(t, f.admin(t))
	a := newSoftAuthenticator(t)
	id := f.registerPasskey(t, token, "  Laptop  ", a)

	r := f.do(t, "GET", "/api/auth/passkeys", token, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	list := r.Body["passkeys"].([]any)
	require.Len(t, list, 1)
	pk := list[0].(map[string]any)
	require.Equal(t, float64(id), pk["id"])
	require.Equal(t, "Laptop", pk["label"])
	require.NotEmpty(t, pk["created_at"])
	require.Nil(t, pk["last_used_at"])
	require.ElementsMatch(t, []string{"id", "label", "created_at", "last_used_at"}, keys(pk), "no key material")
	require.Equal(t, float64(1), f.do(t, "GET", "/api/auth/me", token, nil).Body["passkey_count"])

	// Passwordless sign-in: a session with the same cookies as MFA verify.
	r = f.passkeySignIn(t, a, 1)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "admin", r.Body["user"].(map[string]any)["username"])
	require.Equal(t, float64(1), r.Body["user"].(map[string]any)["passkey_count"])
	require.NotEmpty(t, r.Body["csrf_token"])
	require.Contains(t, r.Header.Values("Set-Cookie")[0]+r.Header.Values("Set-Cookie")[1], "cairn_session=")
	signedIn := r.Body["token"].(string)
	me := f.do(t, "GET", "/api/auth/me", signedIn, nil)
	require.Equal(t, 200, me.Status, me.Raw)
	require.Equal(t, "admin", me.Body["username"])
	pk = f.do(t, "GET", "/api/auth/passkeys", token, nil).Body["passkeys"].([]any)[0].(map[string]any)
	require.NotNil(t, pk["last_used_at"])

	r = f.do(t, "PATCH", fmt.Sprintf("/api/auth/passkeys/%d", id), token, map[string]any{"label": "Phone"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "Phone", r.Body["label"])
	r = f.do(t, "PATCH", fmt.Sprintf("/api/auth/passkeys/%d", id), token, map[string]any{"label": " "})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("label"))

	r = f.do(t, "DELETE", fmt.Sprintf("/api/auth/passkeys/%d", id), token, nil)
	require.Equal(t, 204, r.Status, r.Raw)
	require.Empty(t, f.do(t, "GET", "/api/auth/passkeys", token, nil).Body["passkeys"])
	require.Equal(t, float64(0), f.do(t, "GET", "/api/auth/me", token, nil).Body["passkey_count"])
	r = f.passkeySignIn(t, a, 2)
	require.Equal(t, 401, r.Status, r.Raw)
	require.Equal(t, "invalid_credentials", r.Body["error"])
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A counter that does not move forward means two authenticators share a
// key (a clone): that sign-in is refused.
func TestPasskeySignCountRegressionIsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	token := f.sudo(t, f.admin(t))
	a := newSoftAuthenticator(t)
	f.registerPasskey(t, token, "Key", a)

	require.Equal(t, 200, f.passkeySignIn(t, a, 5).Status)
	for _, counter := range []uint32{5, 3} {
		r := f.passkeySignIn(t, a, counter)
		require.Equal(t, 401, r.Status, r.Raw)
		require.Equal(t, "invalid_credentials", r.Body["error"])
		require.Contains(t, r.Body["message"], "counter")
	}
	require.Equal(t, 200, f.passkeySignIn(t, a, 6).Status)
}

// Another operator's passkey answers exactly like a missing one.
func TestPasskeyOfAnotherOperatorIsNotFound(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	operator := f.operator(t, "passkey-operator")
	id := f.registerPasskey(t, admin, "Admin key", newSoftAuthenticator(t))

	for _, path := range []string{fmt.Sprintf("/api/auth/passkeys/%d", id), "/api/auth/passkeys/999999"} {
		r := f.do(t, "PATCH", path, operator, map[string]any{"label": "Mine now"})
		require.Equal(t, 404, r.Status, r.Raw)
		require.Equal(t, "not_found", r.Body["error"])
		require.Equal(t, "passkey not found", r.Body["message"])
		r = f.do(t, "DELETE", path, operator, nil)
		require.Equal(t, 404, r.Status, r.Raw)
		require.Equal(t, "passkey not found", r.Body["message"])
	}
	require.Empty(t, f.do(t, "GET", "/api/auth/passkeys", operator, nil).Body["passkeys"])
	r := f.do(t, "GET", "/api/auth/passkeys", admin, nil)
	require.Equal(t, "Admin key", r.Body["passkeys"].([]any)[0].(map[string]any)["label"])
}

func TestPasskeyValidation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	operator := f.operator(t, "passkey-validation")

	for _, bad := range []string{"abc", "0", "-1", "1.5"} {
		for _, method := range []string{"PATCH", "DELETE"} {
			r := f.do(t, method, "/api/auth/passkeys/"+bad, admin, map[string]any{"label": "x"})
			require.Equal(t, 400, r.Status, "%s %s: %s", method, bad, r.Raw)
			require.NotEmpty(t, r.field("passkey_id"))
		}
	}

	r := f.do(t, "POST", "/api/auth/passkeys/register/verify", admin, map[string]any{})
	require.Equal(t, 400, r.Status, r.Raw)
	for _, field := range []string{"ceremony_id", "label", "credential"} {
		require.NotEmpty(t, r.field(field), field)
	}
	r = f.do(t, "POST", "/api/auth/passkeys/authenticate/verify", "", map[string]any{"credential": "x"})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("ceremony_id"))
	require.NotEmpty(t, r.field("credential"))
	r = f.do(t, "POST", "/api/auth/passkeys/register/options", admin, map[string]any{"surprise": 1})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("surprise"))

	options := func(token string) (string, map[string]any) {
		r := f.do(t, "POST", "/api/auth/passkeys/register/options", token, f.reauth(t, token))
		require.Equal(t, 200, r.Status, r.Raw)
		return r.Body["ceremony_id"].(string), r.Body["options"].(map[string]any)
	}
	verify := func(token, ceremony string, credential any) response {
		return f.do(t, "POST", "/api/auth/passkeys/register/verify", token,
			map[string]any{"ceremony_id": ceremony, "label": "Key", "credential": credential})
	}

	// A response that is not WebAuthn, or signed for another origin.
	a := newSoftAuthenticator(t)
	id, opts := options(admin)
	r = verify(admin, id, map[string]any{"id": "x"})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("credential"))
	id, opts = options(admin)
	a.origin = "https://evil.example.test"
	r = verify(admin, id, a.create(t, opts))
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("credential"))
	a.origin = testPublicURL

	// A ceremony is single use, belongs to its operator and expires.
	id, opts = options(admin)
	cred := a.create(t, opts)
	r = verify(operator, id, cred)
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("ceremony_id"))
	r = verify(admin, id, cred)
	require.Equal(t, 400, r.Status, "the operator's attempt spent the ceremony: %s", r.Raw)
	require.NotEmpty(t, r.field("ceremony_id"))
	id, opts = options(admin)
	f.clk.Advance(6 * time.Minute)
	r = verify(admin, id, a.create(t, opts))
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("ceremony_id"))
	id, opts = options(admin)
	require.Equal(t, 201, verify(admin, id, a.create(t, opts)).Status)
	// The same authenticator cannot be registered twice.
	id, opts = options(admin)
	require.NotEmpty(t, opts["excludeCredentials"])
	r = verify(admin, id, a.create(t, opts))
	require.Equal(t, 409, r.Status, r.Raw)

	// A sign-in ceremony cannot be replayed either.
	r = f.do(t, "POST", "/api/auth/passkeys/authenticate/options", "", nil)
	signIn := map[string]any{"ceremony_id": r.Body["ceremony_id"], "credential": a.get(t, r.Body["options"].(map[string]any), 1)}
	require.Equal(t, 200, f.do(t, "POST", "/api/auth/passkeys/authenticate/verify", "", signIn).Status)
	r = f.do(t, "POST", "/api/auth/passkeys/authenticate/verify", "", signIn)
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("ceremony_id"))
}

// Directory accounts have no passkey, role or password management (SPEC
// rule 3).
func TestPasskeysRefuseDirectoryAccounts(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	// A real directory account: signed in through slapd.
	uid := slapdtest.Unique("pk")
	dn := slapd.User(t, uid, userPassword)
	group := slapd.Group(t, slapdtest.Unique("pk-ops"), dn)
	body := ldapProvider("Passkey corp")
	body["role_mappings"] = []any{map[string]any{"group": group, "role": "operator"}}
	f.enabledProvider(t, admin, body)
	token := f.signIn(t, map[string]string{}, uid).Body["token"].(string)
	// Nor does an administrator give it a role or a password: the directory does.
	r := f.do(t, "POST", "/api/users/"+uid+"/role", admin, map[string]any{"role": "admin"})
	require.Equal(t, 403, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/users/"+uid+"/reset_password", admin, map[string]any{"password": "a local password!"})
	require.Equal(t, 403, r.Status, r.Raw)
	for _, call := range [][2]string{{"POST", "/api/auth/passkeys/register/options"}, {"GET", "/api/auth/passkeys"}, {"DELETE", "/api/auth/passkeys/1"}} {
		r := f.do(t, call[0], call[1], token, nil)
		require.Equal(t, 403, r.Status, "%s %s: %s", call[0], call[1], r.Raw)
		require.Equal(t, "forbidden", r.Body["error"])
	}
}

// Browsers refuse an IP address as relying party: the routes say so.
func TestPasskeysUnavailableWhenReachedByIP(t *testing.T) {
	t.Parallel()
	f := setup(t)
	token := f.sudo(t, f.admin(t))
	svc, err := passkeys.NewService(f.store, f.engine.auth, "http://127.0.0.1:8080", f.clk.Now)
	require.NoError(t, err)
	srv := api.New(api.Deps{Store: f.store, Auth: f.engine.auth, Cipher: f.engine.cipher, Passkeys: svc,
		PublicURL: "http://127.0.0.1:8080", Log: f.engine.srv.Log}, api.PasskeysArea)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	for _, tc := range []struct{ method, path, token string }{
		{"POST", "/api/auth/passkeys/authenticate/options", ""},
		{"POST", "/api/auth/passkeys/register/options", token},
		{"GET", "/api/auth/passkeys", token},
	} {
		r := f.call(t, hs.URL, tc.method, tc.path, tc.token, nil)
		require.Equal(t, 409, r.Status, r.Raw)
		require.Equal(t, "passkeys_unavailable", r.Body["error"])
		require.Contains(t, r.Body["message"], "http://localhost:8080")
	}
}

// Recovering a flagged account clears its passkeys (SPEC rule 2): the
// forced reset that flags accounts removes them, and so does the recovery
// itself for any registered in between.
func TestRecoveryClearsPasskeys(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	token := f.sudo(t, f.admin(t))
	f.registerPasskey(t, token, "Before reset", newSoftAuthenticator(t))
	admin, err := f.store.UserGetByUsername(ctx, "admin")
	require.NoError(t, err)

	r := f.do(t, "POST", "/api/aegis/force_reset", token, with(map[string]any{"confirm": "FORCE RESET"}, f.reauth(t, token)))
	require.Equal(t, 200, r.Status, r.Raw)
	code := r.Body["recovery_code"].(string)
	setupCode := r.Body["setup_code"].(string)
	left, err := f.store.PasskeyListByUser(ctx, admin.ID)
	require.NoError(t, err)
	require.Empty(t, left)

	_, err = f.store.PasskeyInsert(ctx, db.PasskeyInsertParams{UserID: admin.ID, CredentialID: []byte("stale"), Credential: []byte("{}"), Label: "Stale"})
	require.NoError(t, err)
	r = f.do(t, "POST", "/api/bootstrap/aegis/setup", "", map[string]any{"passphrase": "a brand new passphrase", "setup_code": setupCode})
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/bootstrap/admin/recover", "", map[string]any{"username": "admin", "password": "recovered password", "recovery_code": code})
	require.Equal(t, 200, r.Status, r.Raw)
	left, err = f.store.PasskeyListByUser(ctx, admin.ID)
	require.NoError(t, err)
	require.Empty(t, left)
}

// Passkey sign-in attempts spend the per-address login budget, so they
// cannot be used to guess around the password limits.
func TestPasskeySignInIsRateLimitedPerAddress(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.bootstrap(t)
	attempt := map[string]any{"ceremony_id": "not-a-ceremony", "credential": map[string]any{"id": "x"}}
	for i := 0; i < auth.LoginPerAddress.Limit; i++ {
		r := f.do(t, "POST", "/api/auth/passkeys/authenticate/verify", "", attempt)
		require.Equal(t, 400, r.Status, "attempt %d: %s", i+1, r.Raw)
	}
	r := f.do(t, "POST", "/api/auth/passkeys/authenticate/verify", "", attempt)
	require.Equal(t, 429, r.Status, r.Raw)
	require.Equal(t, "rate_limited", r.Body["error"])
	require.NotEmpty(t, r.Header.Get("Retry-After"))
}
