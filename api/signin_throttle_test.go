package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/internal/slapdtest"
)

// loginFrom signs in through a proxy that says the client is client.
func (f *fixture) loginFrom(t *testing.T, client, username, password string) response {
	t.Helper()
	body, err := json.Marshal(map[string]any{"username": username, "password": password})
	require.NoError(t, err)
	req, err := http.NewRequest("POST", f.url+"/api/auth/login", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", client)
	return do(t, req)
}

// Behind a load balancer every operator used to share the balancer's
// budget. With CAIRN_TRUSTED_PROXIES the client behind it has its own, and
// the audit trail names it.
func TestSignInBudgetsFollowTheClientBehindATrustedProxy(t *testing.T) {
	t.Parallel()
	f := &fixture{store: pgtest.NewDB(t), clk: authtest.NewClock(), github: newFakeGitHub(t),
		trustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	f.sudo(t, f.admin(t))

	const guesser, colleague = "203.0.113.10", "203.0.113.11"
	for i := range auth.FailuresPerAddress.Free {
		r := f.loginFrom(t, "192.0.2.1, "+guesser, fmt.Sprintf("nobody-%d", i), "wrong password!!")
		require.Equal(t, 401, r.Status, r.Raw)
	}
	r := f.loginFrom(t, guesser, "admin", adminPassword)
	require.Equal(t, 429, r.Status, r.Raw)
	require.Equal(t, "1", r.Header.Get("Retry-After"))
	r = f.loginFrom(t, colleague, "admin", adminPassword)
	require.Equal(t, 200, r.Status, "another client behind the same proxy: %s", r.Raw)

	rows, err := f.store.AuditList(context.Background(), db.AuditListParams{Username: "nobody-0", MaxRows: 10})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, guesser, rows[0].ClientAddr, "the right-most untrusted hop, not the spoofable left-most")
}

// Directory sign-in binds at most three times per username in 15 minutes,
// below a typical lockout threshold; names the directory does not know get
// the same answers, and a disabled account says so only to its password.
func TestDirectorySignInBoundsBindsPerUsername(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{}
	f := setup(t)
	token := f.sudo(t, f.admin(t))
	uid, ghost := slapdtest.Unique("bound"), slapdtest.Unique("ghost")
	dn := slapd.User(t, uid, userPassword)
	group := slapdtest.Unique("staff")
	slapd.Group(t, group, dn)
	body := ldapProvider("Bounded")
	body["role_mappings"] = []any{map[string]any{"group": group, "role": "operator"}}
	f.enabledProvider(t, token, body)

	for _, name := range []string{uid, ghost} {
		for range auth.DirectoryFailuresPerUser.Free {
			r := f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": name, "password": "wrong password"})
			require.Equal(t, 401, r.Status, r.Raw)
		}
		r := f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": name, "password": userPassword})
		require.Equal(t, 429, r.Status, "%s: %s", name, r.Raw)
		require.Equal(t, "900", r.Header.Get("Retry-After"))
	}
	f.clk.Advance(15 * time.Minute)
	f.signIn(t, secrets, uid)

	// Disabled: a wrong password is just wrong; the right one hears why.
	f.sudo(t, token) // the clock moved past the re-authentication window
	r := f.do(t, "POST", "/api/users/"+uid+"/directory-cache", token, map[string]any{"enabled": false})
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": uid, "password": "wrong password"})
	require.Equal(t, 401, r.Status, r.Raw)
	require.Equal(t, "invalid_credentials", r.Body["error"])
	r = f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": uid, "password": userPassword})
	require.Equal(t, 403, r.Status, r.Raw)
}
