package api_test

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/registry/registrytest"
)

// newReadToken creates a read token carrying scopes and returns its text.
func (f *fixture) newReadToken(t *testing.T, session string, scopes ...string) string {
	t.Helper()
	body := map[string]any{"name": "read", "expires_in_days": 7, "access": "read"}
	if len(scopes) > 0 {
		body["scopes"] = scopes
	}
	r := f.do(t, "POST", "/api/auth/tokens", session, body)
	require.Equal(t, 201, r.Status, r.Raw)
	return r.Body["token"].(string)
}

// requireScopeRequired checks a refusal for want of read:device-content.
func requireScopeRequired(t *testing.T, r response, what string) {
	t.Helper()
	require.Equal(t, 403, r.Status, "%s: %s", what, r.Raw)
	require.Equal(t, "scope_required", r.Body["error"], what)
	require.Contains(t, r.Body["message"], "read:device-content", what)
}

// Device content (issue 21 item 11): a read token without
// read:device-content is refused file text, registry values and
// downloaded files, and sees process lists with their command lines
// redacted; the same token with the scope, a write token and a session
// read all of it. Listing a device's files and registry roots stays open.
func TestDeviceContentNeedsItsScope(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "content")
	f.opsAgent(t, admin, site, "content-01")
	f.registryAgent(t, admin, site, "content-win", "Microsoft Windows 11 Pro", registrytest.New())
	f.transferAgent(t, admin, site, "content-xfer")

	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("s3cret\n"), 0o600))
	const reg = "/api/device/registry/content-win"
	r := f.do(t, "POST", reg+"/key/create", admin, map[string]any{"path": `HKCU\Software\Cairn`})
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "POST", reg+"/value/create", admin, map[string]any{"path": `HKCU\Software\Cairn`,
		"value": map[string]any{"name": "Password", "type": "REG_SZ", "data": "hunter2"}})
	require.Equal(t, 200, r.Status, r.Raw)
	download := transferID(t, f.do(t, "POST", "/api/device/files/content-xfer/download", admin, map[string]any{"paths": []string{secret}}))
	require.Equal(t, "completed", f.waitTransfer(t, admin, "content-xfer", download)["state"])
	// A fresh process snapshot, stored for the device view.
	r = f.do(t, "GET", "/api/device/processes/content-01?max_age_seconds=0", admin, nil)
	require.Equal(t, 200, r.Status, r.Body["error"])
	require.NotEmpty(t, r.Body["processes"])

	bare := f.newReadToken(t, admin)
	scoped := f.newReadToken(t, admin, "read:device-content")
	write, _ := f.newAPIToken(t, admin, "write", 7)
	for _, c := range []struct {
		name, token string
		allowed     bool
	}{{"read token", bare, false}, {"read token with read:device-content", scoped, true}, {"write token", write, true}, {"session", admin, true}} {
		t.Run(c.name, func(t *testing.T) {
			// Listing is not content.
			r := f.do(t, "GET", "/api/device/files/content-01/children?path="+url.QueryEscape(dir), c.token, nil)
			require.Equal(t, 200, r.Status, r.Raw)
			require.Contains(t, r.Raw, "secret.txt")
			r = f.do(t, "GET", reg+"/roots", c.token, nil)
			require.Equal(t, 200, r.Status, r.Raw)

			text := f.do(t, "GET", "/api/device/files/content-01/text?path="+url.QueryEscape(secret), c.token, nil)
			values := f.do(t, "GET", reg+"/children?path="+url.QueryEscape(`HKCU\Software\Cairn`), c.token, nil)
			content := f.do(t, "GET", transferPath("content-xfer", download, "content"), c.token, nil)
			if !c.allowed {
				requireScopeRequired(t, text, "file text")
				requireScopeRequired(t, values, "registry values")
				requireScopeRequired(t, content, "download content")
				for _, r := range []response{text, values, content} {
					require.NotContains(t, r.Raw, "s3cret")
					require.NotContains(t, r.Raw, "hunter2")
				}
			} else {
				require.Equal(t, 200, text.Status, text.Raw)
				require.Equal(t, "s3cret\n", text.Body["content"])
				require.Equal(t, 200, values.Status, values.Raw)
				require.Contains(t, values.Raw, "hunter2")
				require.Equal(t, 200, content.Status, content.Raw)
				require.Equal(t, "s3cret\n", content.Raw)
			}

			// Process command lines: redacted, not refused.
			procs := f.do(t, "GET", "/api/device/processes/content-01", c.token, nil)
			require.Equal(t, 200, procs.Status, procs.Body["error"])
			// (Failure messages leave out the lists: they hold the test
			// machine's real command lines.)
			require.Equal(t, !c.allowed, procs.Body["command_lines_redacted"])
			require.NotEmpty(t, procs.Body["processes"])
			var lines int
			for _, p := range procs.Body["processes"].([]any) {
				p := p.(map[string]any)
				require.NotEmpty(t, p["name"], "the rest of the process stays")
				if p["command_line"] != "" {
					lines++
				}
			}
			details := f.do(t, "GET", "/api/device/details/content-01", c.token, nil)
			require.Equal(t, 200, details.Status, details.Body["error"])
			require.Equal(t, !c.allowed, details.Body["process_command_lines_redacted"])
			require.NotEmpty(t, details.Body["processes"])
			var detailLines int
			for _, p := range details.Body["processes"].([]any) {
				if cmd, _ := p.(map[string]any)["command"].(string); cmd != "" {
					detailLines++
				}
			}
			if c.allowed {
				require.Positive(t, lines, "command lines are shown")
				require.Positive(t, detailLines, "command lines are shown")
			} else {
				require.Zero(t, lines, "command lines are redacted")
				require.Zero(t, detailLines, "command lines are redacted")
			}
		})
	}
}
