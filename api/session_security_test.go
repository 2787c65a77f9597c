package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// setupPublicURL is a fixture whose replica serves under publicURL.
func setupPublicURL(t *testing.T, publicURL string) *fixture {
	t.Helper()
	f := setup(t)
	f.publicURL = publicURL
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	return f
}

// signInWith signs the admin in at base through client (headers added to
// each request) and returns the MFA step's body, headers and cookies.
func (f *fixture) signInWith(t *testing.T, client *http.Client, base, secret string, headers map[string]string) (map[string]any, http.Header, map[string]*http.Cookie) {
	t.Helper()
	post := func(path string, body map[string]any) (map[string]any, *http.Response) {
		buf, err := json.Marshal(body)
		require.NoError(t, err)
		req, err := http.NewRequest("POST", base+path, bytes.NewReader(buf))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		res, err := client.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, 200, res.StatusCode)
		var out map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
		return out, res
	}
	login, _ := post("/api/auth/login", map[string]any{"username": "admin", "password": adminPassword})
	body, res := post("/api/auth/mfa/verify", map[string]any{"pending_token": login["pending_token"], "code": f.totp(t, secret)})
	cookies := map[string]*http.Cookie{}
	for _, c := range res.Cookies() {
		cookies[c.Name] = c
	}
	return body, res.Header, cookies
}

func requireHostCookies(t *testing.T, cookies map[string]*http.Cookie, what string) {
	t.Helper()
	require.Len(t, cookies, 2, what)
	for _, name := range []string{"__Host-cairn_session", "__Host-cairn_csrf"} {
		c := cookies[name]
		require.NotNil(t, c, "%s: %s", what, name)
		require.True(t, c.Secure, "%s: %s", what, name)
		require.Equal(t, "/", c.Path, "%s: %s", what, name)
		require.Empty(t, c.Domain, "%s: %s", what, name)
		require.Equal(t, http.SameSiteStrictMode, c.SameSite)
	}
	require.True(t, cookies["__Host-cairn_session"].HttpOnly)
}

// An https public URL means browsers use HTTPS even when a TLS-terminating
// proxy forwards plain HTTP: the cookies are Secure and __Host- prefixed,
// HSTS is sent, and only the prefixed cookie is a session.
func TestHTTPSPublicURLBehindAProxy(t *testing.T) {
	t.Parallel()
	f := setup(t) // public URL https://cairn.example.test, served over plain HTTP
	secret := f.bootstrap(t)
	body, header, cookies := f.signInWith(t, http.DefaultClient, f.url, secret, nil)
	requireHostCookies(t, cookies, "behind a proxy")
	require.Equal(t, "max-age=31536000", header.Get("Strict-Transport-Security"))
	require.Equal(t, "max-age=31536000", f.do(t, "GET", "/api/bootstrap/state", "", nil).Header.Get("Strict-Transport-Security"))

	me := func(name, value string) int {
		req, err := http.NewRequest("GET", f.url+"/api/auth/me", nil)
		require.NoError(t, err)
		req.AddCookie(&http.Cookie{Name: name, Value: value})
		return do(t, req).Status
	}
	session := cookies["__Host-cairn_session"].Value
	require.NotEmpty(t, session)
	require.Equal(t, body["token"], session, "API clients keep the bearer token")
	require.Equal(t, 200, me("__Host-cairn_session", session))
	require.Equal(t, 401, me("cairn_session", session), "an unprefixed cookie could be planted over plain HTTP")
}

// A plain-HTTP public URL (a local Engine) keeps plain cookie names without
// Secure, or the browser would drop them; requests over the Engine's own
// HTTPS listener still get Secure __Host- cookies and HSTS.
func TestHTTPPublicURLCookies(t *testing.T) {
	t.Parallel()
	f := setupPublicURL(t, "http://localhost:8080")
	secret := f.bootstrap(t)
	_, header, cookies := f.signInWith(t, http.DefaultClient, f.url, secret, nil)
	require.Empty(t, header.Get("Strict-Transport-Security"))
	require.Len(t, cookies, 2)
	for _, name := range []string{"cairn_session", "cairn_csrf"} {
		require.NotNil(t, cookies[name], name)
		require.False(t, cookies[name].Secure, name)
	}

	hs := httptest.NewTLSServer(validated(t, f.engine.srv.Handler()))
	t.Cleanup(hs.Close)
	_, header, cookies = f.signInWith(t, hs.Client(), hs.URL, secret, nil)
	requireHostCookies(t, cookies, "over HTTPS")
	require.Equal(t, "max-age=31536000", header.Get("Strict-Transport-Security"))

	// Logging out clears the cookies under the names they were set with.
	req, err := http.NewRequest("POST", hs.URL+"/api/auth/logout", nil)
	require.NoError(t, err)
	req.AddCookie(cookies["__Host-cairn_session"])
	req.Header.Set("X-CSRF-Token", cookies["__Host-cairn_csrf"].Value)
	res, err := hs.Client().Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 204, res.StatusCode)
	cleared := map[string]bool{}
	for _, c := range res.Cookies() {
		require.Equal(t, -1, c.MaxAge, c.Name)
		cleared[c.Name] = true
	}
	require.Equal(t, map[string]bool{"__Host-cairn_session": true, "__Host-cairn_csrf": true}, cleared)
}

// A browser's sign-in answer carries no session token: the HttpOnly cookie
// is the session, so a script on the page cannot read it. Browsers mark
// their requests with Sec-Fetch-* (or Origin), which scripts cannot remove.
func TestBrowserSignInKeepsTheTokenOutOfTheBody(t *testing.T) {
	t.Parallel()
	f := setup(t)
	secret := f.bootstrap(t)
	for _, headers := range []map[string]string{
		{"Sec-Fetch-Mode": "cors", "Sec-Fetch-Site": "same-origin"},
		{"Origin": "https://cairn.example.test"},
	} {
		body, _, cookies := f.signInWith(t, http.DefaultClient, f.url, secret, headers)
		require.NotContains(t, body, "token", "%v", headers)
		require.NotEmpty(t, body["csrf_token"])
		require.Equal(t, "admin", body["user"].(map[string]any)["username"])
		require.NotEmpty(t, cookies["__Host-cairn_session"].Value)
		req, err := http.NewRequest("GET", f.url+"/api/auth/me", nil)
		require.NoError(t, err)
		req.AddCookie(cookies["__Host-cairn_session"])
		require.Equal(t, 200, do(t, req).Status, "the cookie is the session")
	}
	body, _, _ := f.signInWith(t, http.DefaultClient, f.url, secret, nil)
	require.NotEmpty(t, body["token"], "API clients still get a bearer token")
}

// Every answer, the console's page first, carries a Content-Security-Policy
// that allows scripts from the Engine's own files only.
func TestContentSecurityPolicy(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, path := range []string{"/", "/devices", "/assets/app.js", "/api/bootstrap/state"} {
		r := f.do(t, "GET", path, "", nil)
		require.Equal(t, 200, r.Status, path)
		csp := r.Header.Get("Content-Security-Policy")
		directives := map[string]string{}
		for _, d := range strings.Split(csp, ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
			directives[name] = value
		}
		require.Equal(t, "'self'", directives["script-src"], "%s: %s", path, csp)
		require.Equal(t, "'self'", directives["default-src"], path)
		require.Equal(t, "'none'", directives["object-src"], path)
		require.Equal(t, "'none'", directives["base-uri"], path)
		require.Equal(t, "'none'", directives["frame-ancestors"], path)
		require.Equal(t, "'self'", directives["connect-src"], path)
	}
}
