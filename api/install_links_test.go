package api_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/installlinks"
)

// siteLinks reads one site's install_links from GET /api/sites.
func (f *fixture) siteLinks(t *testing.T, token string, site int64) map[string]map[string]any {
	t.Helper()
	r := f.do(t, "GET", "/api/sites", token, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	for _, s := range r.Body["sites"].([]any) {
		m := s.(map[string]any)
		if int64(m["site_id"].(float64)) == site {
			require.Equal(t, "engine", m["agent_binary_source"])
			out := map[string]map[string]any{}
			for p, l := range m["install_links"].(map[string]any) {
				out[p] = l.(map[string]any)
			}
			return out
		}
	}
	t.Fatalf("site %d not listed", site)
	return nil
}

// fetch downloads a link (its public base swapped for the test server's)
// anonymously, as an installer would.
func (f *fixture) fetch(t *testing.T, link string, header map[string]string) response {
	t.Helper()
	require.True(t, strings.HasPrefix(link, testPublicURL+installlinks.PathPrefix), link)
	req, err := http.NewRequest("GET", f.url+strings.TrimPrefix(link, testPublicURL), nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return do(t, req)
}

// waitCount waits for a link's counter: it is counted once the response
// is complete, which the client may see a moment before.
func (f *fixture) waitCount(t *testing.T, token string, site int64, platform string, n int64) {
	t.Helper()
	var last any
	require.Eventually(t, func() bool {
		last = f.siteLinks(t, token, site)[platform]["download_count"]
		return last == float64(n)
	}, 30*time.Second, 50*time.Millisecond, "download_count stays %v, want %d", last, n)
}

func requireRefused(t *testing.T, r response, why string) {
	t.Helper()
	require.Equal(t, 403, r.Status, "%s: %s", why, r.Raw)
	require.Equal(t, "install_link_invalid", r.Body["error"], why)
	// One answer for every reason: nothing says which check failed.
	require.Equal(t, installlinks.ErrInvalid.Message, r.Body["message"], why)
}

// withQuery returns link with one query value replaced.
func withQuery(t *testing.T, link, key, value string) string {
	t.Helper()
	u, err := url.Parse(link)
	require.NoError(t, err)
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// A site's install links: listed per platform with the artifact, the
// counter rising on each complete download (query and token form), and
// every altered link refused with the one code.
func TestInstallLinksDownloadAndCount(t *testing.T) {
	t.Parallel()
	f, bodies := setupWithArtifacts(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "install")
	other := f.createSite(t, admin, "install-other")

	links := f.siteLinks(t, admin, site)
	require.Len(t, links, 2)
	linux := links["linux-amd64"]
	require.EqualValues(t, 0, linux["download_count"])
	require.Equal(t, "linux-amd64-"+hexSHA(bodies["linux-amd64"])[:16], linux["artifact_id"])
	require.Equal(t, "test-build-linux-amd64", linux["build_id"])
	expires, err := time.Parse(time.RFC3339, linux["expires_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, f.clk.Now().Add(installlinks.TTL), expires, time.Minute)
	u := linux["url"].(string)
	require.Contains(t, u, testPublicURL+"/api/agent/install/download/linux-amd64?")
	for _, k := range []string{"site_id", "artifact", "expires", "download_signature"} {
		require.Contains(t, u, k+"=")
	}
	require.Contains(t, linux["install_command"], "curl -fsSL")
	require.Contains(t, linux["install_command"], "install --server "+testPublicURL+" --code '<enrollment-code>'")
	require.Contains(t, links["windows-amd64"]["install_command"], "Invoke-WebRequest")
	require.NotEqual(t, u, f.siteLinks(t, admin, other)["linux-amd64"]["url"], "each site has its own link")
	require.Equal(t, u, f.siteLinks(t, admin, site)["linux-amd64"]["url"], "listing again gives the same link")

	r := f.fetch(t, u, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, hexSHA(bodies["linux-amd64"]), hexSHA([]byte(r.Raw)))
	require.Contains(t, r.Header.Get("Content-Disposition"), `filename="cairn-agent"`)
	r = f.fetch(t, linux["token_url"].(string), nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, hexSHA(bodies["linux-amd64"]), hexSHA([]byte(r.Raw)))
	win := f.fetch(t, links["windows-amd64"]["url"].(string), nil)
	require.Equal(t, 200, win.Status, win.Raw)
	require.Contains(t, win.Header.Get("Content-Disposition"), `filename="cairn-agent.exe"`)
	f.waitCount(t, admin, site, "linux-amd64", 2)

	// A range counts only when it delivers the end of the file (a resumed
	// download completing).
	size := len(bodies["linux-amd64"])
	part := f.fetch(t, u, map[string]string{"Range": "bytes=0-99"})
	require.Equal(t, 206, part.Status)
	require.Equal(t, bodies["linux-amd64"][:100], []byte(part.Raw))
	f.waitCount(t, admin, site, "linux-amd64", 2)
	rest := f.fetch(t, u, map[string]string{"Range": "bytes=100-"})
	require.Equal(t, 206, rest.Status)
	require.Equal(t, bodies["linux-amd64"][100:], []byte(rest.Raw))
	f.waitCount(t, admin, site, "linux-amd64", 3)
	require.EqualValues(t, size, len(r.Raw))

	sig := linux["url"].(string)[strings.Index(u, "download_signature=")+len("download_signature="):]
	flipped := "A"
	if sig[0] == 'A' {
		flipped = "B"
	}
	for why, link := range map[string]string{
		"tampered signature":    withQuery(t, u, "download_signature", flipped+sig[1:]),
		"no signature":          withQuery(t, u, "download_signature", ""),
		"another site":          withQuery(t, u, "site_id", strconv.FormatInt(other, 10)),
		"later expiry":          withQuery(t, u, "expires", expires.Add(24*time.Hour).Format(time.RFC3339)),
		"another artifact":      withQuery(t, u, "artifact", links["windows-amd64"]["artifact_id"].(string)),
		"wrong platform":        strings.Replace(u, "/download/linux-amd64?", "/download/windows-amd64?", 1),
		"unknown platform":      strings.Replace(u, "/download/linux-amd64?", "/download/darwin-arm64?", 1),
		"bad token":             strings.Replace(linux["token_url"].(string), "/download/"+strconv.FormatInt(site, 10)+".", "/download/"+strconv.FormatInt(site, 10)+"x", 1),
		"token, wrong platform": strings.Replace(linux["token_url"].(string), "/linux-amd64", "/windows-amd64", 1),
	} {
		requireRefused(t, f.fetch(t, link, nil), why)
	}
	f.waitCount(t, admin, site, "linux-amd64", 3)
}

// Expiry: a listed link is valid for installlinks.TTL; listing near its end
// gives a later expiry with the same nonce and counter, while the URL
// handed out before keeps working until its own expiry and no longer.
func TestInstallLinkExpiry(t *testing.T) {
	t.Parallel()
	f, _ := setupWithArtifacts(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "expiry")
	first := f.siteLinks(t, admin, site)["linux-amd64"]
	require.Equal(t, 200, f.fetch(t, first["url"].(string), nil).Status)

	// Operator sessions idle out long before a link does (and are touched
	// with the database's clock), so after the jump the links are listed
	// through the service GET /api/sites uses.
	links := f.engine.srv.InstallLinks
	listed := func() installlinks.Link {
		m, err := links.ForSites(context.Background(), testPublicURL, []int64{site})
		require.NoError(t, err)
		return m[site]["linux-amd64"]
	}
	f.waitCount(t, admin, site, "linux-amd64", 1)
	f.clk.Advance(installlinks.TTL - installlinks.RenewWithin + time.Hour)
	renewed := listed()
	require.NotEqual(t, first["url"], renewed.URL)
	require.EqualValues(t, 1, renewed.DownloadCount, "same link, same counter")
	require.Equal(t, f.clk.Now().Add(installlinks.TTL).UTC().Truncate(time.Second), renewed.ExpiresAt)
	require.Equal(t, 200, f.fetch(t, first["url"].(string), nil).Status, "the older URL still works until its expiry")
	require.Equal(t, renewed.URL, listed().URL, "not renewed again while fresh")

	f.clk.Advance(installlinks.RenewWithin)
	requireRefused(t, f.fetch(t, first["url"].(string), nil), "expired")
	requireRefused(t, f.fetch(t, first["token_url"].(string), nil), "expired token form")
	require.Equal(t, 200, f.fetch(t, renewed.URL, nil).Status)
	require.Eventually(t, func() bool { return listed().DownloadCount == 3 }, 30*time.Second, 50*time.Millisecond)
}

// Revoking gives a replacement with a zeroed counter and refuses the old
// link; rotating (or adding) an enrollment code of the site refuses the
// links listed before it. Only administrators revoke.
func TestInstallLinkRevokeAndCodeRotation(t *testing.T) {
	t.Parallel()
	f, _ := setupWithArtifacts(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "revoke")
	code := f.do(t, "POST", "/api/admin/enrollment-codes", admin, map[string]any{"site_id": site})
	require.Equal(t, 201, code.Status, code.Raw)

	old := f.siteLinks(t, admin, site)["linux-amd64"]
	require.Equal(t, 200, f.fetch(t, old["url"].(string), nil).Status)
	f.waitCount(t, admin, site, "linux-amd64", 1)
	win := f.siteLinks(t, admin, site)["windows-amd64"]

	path := "/api/sites/" + strconv.FormatInt(site, 10) + "/agent-install-links/linux-amd64/revoke"
	operator := f.operator(t, "revoker")
	r := f.do(t, "POST", path, operator, nil)
	require.Equal(t, 403, r.Status, r.Raw)
	require.Equal(t, "forbidden", r.Body["error"])

	r = f.do(t, "POST", path, admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.EqualValues(t, 0, r.Body["download_count"])
	require.NotEqual(t, old["url"], r.Body["url"])
	require.Equal(t, old["artifact_id"], r.Body["artifact_id"])
	requireRefused(t, f.fetch(t, old["url"].(string), nil), "revoked")
	requireRefused(t, f.fetch(t, old["token_url"].(string), nil), "revoked token form")
	listed := f.siteLinks(t, admin, site)
	require.Equal(t, r.Body["url"], listed["linux-amd64"]["url"])
	require.EqualValues(t, 0, listed["linux-amd64"]["download_count"])
	require.Equal(t, 200, f.fetch(t, r.Body["url"].(string), nil).Status)
	f.waitCount(t, admin, site, "linux-amd64", 1)
	require.Equal(t, win["url"], listed["windows-amd64"]["url"], "the other platform's link is untouched")

	for _, tc := range []struct {
		path   string
		status int
		code   string
	}{
		{"/api/sites/" + strconv.FormatInt(site, 10) + "/agent-install-links/darwin-arm64/revoke", 400, "validation_failed"},
		{"/api/sites/999999/agent-install-links/linux-amd64/revoke", 404, "not_found"},
		{"/api/sites/abc/agent-install-links/linux-amd64/revoke", 400, "validation_failed"},
	} {
		r := f.do(t, "POST", tc.path, admin, nil)
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.path, r.Raw)
		require.Equal(t, tc.code, r.Body["error"], tc.path)
	}

	// Rotating the site's code: every link listed before stops working.
	before := f.siteLinks(t, admin, site)
	rot := f.do(t, "POST", "/api/admin/enrollment-codes/"+itoa(code.Body["id"].(float64))+"/rotate", admin, nil)
	require.Equal(t, 200, rot.Status, rot.Raw)
	for p, l := range before {
		requireRefused(t, f.fetch(t, l["url"].(string), nil), "rotated code, "+p)
	}
	after := f.siteLinks(t, admin, site)
	require.NotEqual(t, before["linux-amd64"]["url"], after["linux-amd64"]["url"])
	require.EqualValues(t, 1, after["linux-amd64"]["download_count"], "the counter belongs to the link, not the code")
	require.Equal(t, 200, f.fetch(t, after["linux-amd64"]["url"].(string), nil).Status)

	// So does a new code for the site.
	require.Equal(t, 201, f.do(t, "POST", "/api/admin/enrollment-codes", admin, map[string]any{"site_id": site}).Status)
	requireRefused(t, f.fetch(t, after["linux-amd64"]["url"].(string), nil), "new code")
}
