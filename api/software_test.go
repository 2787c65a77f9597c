package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/software"
)

func (f *fixture) postSoftware(t *testing.T, id devicetrust.Identity, sw ...proto.Software) {
	t.Helper()
	_, err := f.engine.devices.Details(context.Background(), id, proto.Details{Inventory: proto.Inventory{Software: sw}})
	require.NoError(t, err)
}

func swRow(name, version string) proto.Software {
	return proto.Software{Name: name, Version: version, Publisher: "Vendor", Source: "msi"}
}

// auditRow finds one row of the audit as token sees it.
func (f *fixture) auditRow(t *testing.T, token, name, version string) map[string]any {
	t.Helper()
	r := f.do(t, "GET", "/api/software/audit?limit=500&q="+strings.ReplaceAll(name, " ", "+"), token, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	for _, row := range r.Body["software"].([]any) {
		m := row.(map[string]any)
		if m["name"] == name && m["version"] == version {
			return m
		}
	}
	return nil
}

func pngIcon(t *testing.T, size int, c color.Color) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	for x := range size {
		for y := range size {
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

func TestSoftwareAuditRoute(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	siteA, siteB := f.createSite(t, admin, "swa"), f.createSite(t, admin, "swb")
	f.postSoftware(t, f.addDevice(t, "sw-a1", "sw-a1", siteA, deviceState{}), swRow("Notepad++", "8.6"), swRow("VLC", "3.0"))
	f.postSoftware(t, f.addDevice(t, "sw-a2", "sw-a2", siteA, deviceState{}), swRow("Notepad++", "8.6"))
	f.postSoftware(t, f.addDevice(t, "sw-b1", "sw-b1", siteB, deviceState{}), swRow("Notepad++", "8.6"), swRow("Hidden App", "1"))
	operator := f.scopedOperatorOf(t, admin, "sw-operator", siteA)

	r := f.do(t, "GET", "/api/software/audit?sort=-device_count", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.EqualValues(t, 3, r.Body["total"])
	first := r.Body["software"].([]any)[0].(map[string]any)
	require.Equal(t, map[string]any{"name": "Notepad++", "version": "8.6", "publisher": "Vendor", "device_count": float64(3),
		"icon_hash": nil, "uninstall_blocked": false, "uninstall_override": false}, first)

	r = f.do(t, "GET", "/api/software/audit?sort=-device_count", operator, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.EqualValues(t, 2, r.Body["total"])
	require.NotContains(t, r.Raw, "Hidden App")
	require.EqualValues(t, 2, r.Body["software"].([]any)[0].(map[string]any)["device_count"])

	for q, field := range map[string]string{"limit=0": "limit", "limit=501": "limit", "offset=-1": "offset", "sort=publisher": "sort"} {
		r := f.do(t, "GET", "/api/software/audit?"+q, admin, nil)
		require.Equal(t, 400, r.Status, r.Raw)
		require.NotEmpty(t, r.field(field), r.Raw)
	}
}

func TestSoftwareIconOverrides(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	siteA, siteB := f.createSite(t, admin, "ica"), f.createSite(t, admin, "icb")
	f.postSoftware(t, f.addDevice(t, "ic-a", "ic-a", siteA, deviceState{}), swRow("Contoso Agent", "2.4"))
	f.postSoftware(t, f.addDevice(t, "ic-b", "ic-b", siteB, deviceState{}), swRow("Contoso Agent", "2.5"))
	operator := f.scopedOperatorOf(t, admin, "ic-operator", siteA)

	red := pngIcon(t, 16, color.RGBA{R: 255, A: 255})
	r := f.do(t, "POST", "/api/device/software/ic-a/icon-override", operator, map[string]any{"name": "contoso agent", "icon": red})
	require.Equal(t, 200, r.Status, r.Raw)
	sum := sha256.Sum256(red)
	hash := hex.EncodeToString(sum[:])
	rule := r.Body["rule"].(map[string]any)
	require.Equal(t, hash, rule["icon_hash"])
	require.Equal(t, "Contoso Agent", rule["name"], "the rule takes the name as the device reports it")
	require.Equal(t, "ic-operator", rule["updated_by"])
	// The device has no agent socket: the rule is saved, the refresh says why it did not go.
	require.Equal(t, map[string]any{"requested": false, "error": "agent_socket_missing"}, r.Body["refresh"])
	// The icon applies to every version, fleet-wide.
	require.Equal(t, hash, f.auditRow(t, admin, "Contoso Agent", "2.5")["icon_hash"])

	// The icon route: the bytes, a safe type, cached for good, sandboxed.
	get := func(h, etag string) *http.Response {
		req, err := http.NewRequest("GET", f.url+"/api/device/software/icon/"+h, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+operator)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	res := get(hash, "")
	require.Equal(t, 200, res.StatusCode)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, red, body)
	require.Equal(t, "image/png", res.Header.Get("Content-Type"))
	require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
	require.Contains(t, res.Header.Get("Cache-Control"), "max-age=31536000")
	require.Contains(t, res.Header.Get("Content-Security-Policy"), "sandbox")
	require.Equal(t, 304, get(hash, res.Header.Get("ETag")).StatusCode)
	require.Equal(t, 404, get(strings.Repeat("0", 64), "").StatusCode)
	require.Equal(t, 404, get("not-a-hash", "").StatusCode)

	// A clean SVG is accepted and replaces the PNG, which nothing uses any more.
	svg := []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" fill="#0a0"/></svg>`)
	r = f.do(t, "POST", "/api/device/software/ic-a/icon-override", operator, map[string]any{"name": "Contoso Agent", "icon": svg})
	require.Equal(t, 200, r.Status, r.Raw)
	svgHash := r.Body["rule"].(map[string]any)["icon_hash"].(string)
	require.Equal(t, "image/svg+xml", get(svgHash, "").Header.Get("Content-Type"))
	require.Equal(t, 404, get(hash, "").StatusCode, "the replaced icon is gone")

	bad := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"gif", map[string]any{"icon": []byte("GIF89a\x01\x00\x01\x00")}, "icon"},
		{"too big", map[string]any{"icon": append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, software.MaxIconBytes)...)}, "icon"},
		{"too many pixels", map[string]any{"icon": pngIcon(t, software.MaxIconDimension+1, color.Black)}, "icon"},
		{"broken png", map[string]any{"icon": []byte("\x89PNG\r\n\x1a\nnope")}, "icon"},
		{"truncated ico", map[string]any{"icon": []byte{0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 0, 0xff, 0xff, 0, 0, 22, 0, 0, 0}}, "icon"},
		{"svg script", map[string]any{"icon": []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)}, "icon"},
		{"svg handler", map[string]any{"icon": []byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`)}, "icon"},
		{"svg external", map[string]any{"icon": []byte(`<svg xmlns="http://www.w3.org/2000/svg"><image href="https://evil.example/x.png"/></svg>`)}, "icon"},
		{"svg entity", map[string]any{"icon": []byte(`<!DOCTYPE svg [<!ENTITY x "y">]><svg xmlns="http://www.w3.org/2000/svg"/>`)}, "icon"},
		{"two at once", map[string]any{"icon": red, "clear_icon": true}, "icon"},
		{"nothing", map[string]any{}, "icon"},
		{"relative display icon", map[string]any{"display_icon": `agent.ico`}, "display_icon"},
		{"display icon not an icon", map[string]any{"display_icon": `C:\Program Files\Contoso\readme.txt`}, "display_icon"},
	}
	for _, tc := range bad {
		tc.body["name"] = "Contoso Agent"
		r := f.do(t, "POST", "/api/device/software/ic-a/icon-override", operator, tc.body)
		require.Equal(t, 400, r.Status, "%s: %s", tc.name, r.Raw)
		require.NotEmpty(t, r.field(tc.field), "%s: %s", tc.name, r.Raw)
	}

	// An endpoint resource for the agent instead: the uploaded icon goes.
	r = f.do(t, "POST", "/api/device/software/ic-a/icon-override", operator,
		map[string]any{"name": "Contoso Agent", "display_icon": `C:\Program Files\Contoso Agent\agent.exe,0`})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Nil(t, r.Body["rule"].(map[string]any)["icon_hash"])
	require.Equal(t, 404, get(svgHash, "").StatusCode)
	require.Nil(t, f.auditRow(t, admin, "Contoso Agent", "2.4")["icon_hash"])

	// Out of scope is absent; unknown software too.
	r = f.do(t, "POST", "/api/device/software/ic-b/icon-override", operator, map[string]any{"name": "Contoso Agent", "clear_icon": true})
	require.Equal(t, 404, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/device/software/ic-a/icon-override", operator, map[string]any{"name": "Other", "clear_icon": true})
	require.Equal(t, 404, r.Status, r.Raw)

	// Remove the rule.
	r = f.do(t, "POST", "/api/device/software/ic-a/icon-override", operator, map[string]any{"name": "Contoso Agent", "remove": true})
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/device/software/ic-a/icon-override", operator, map[string]any{"name": "Contoso Agent", "remove": true})
	require.Equal(t, 404, r.Status, r.Raw)
}

func TestSoftwareUninstallRules(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	admin := f.admin(t)
	siteA := f.createSite(t, admin, "una")
	f.postSoftware(t, f.addDevice(t, "un-a", "un-a", siteA, deviceState{}), swRow("Fedora Media Writer", "5.2.8"), swRow("Fedora Media Writer", "5.0"))
	operator := f.scopedOperatorOf(t, admin, "un-operator", siteA)
	svc := software.New(f.store)
	post := func(token, action string, body map[string]any) response {
		return f.do(t, "POST", "/api/device/software/un-a/"+action, token, body)
	}

	// Block one version: that row is blocked, the other is not, and the
	// uninstall gate refuses it with the block's reason.
	r := post(operator, "uninstall-block", map[string]any{"name": "Fedora Media Writer", "version": "5.2.8"})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("reason"))
	r = post(operator, "uninstall-block", map[string]any{"name": "Fedora Media Writer", "version": "9.9", "reason": "prompts"})
	require.Equal(t, 404, r.Status, r.Raw)
	r = post(operator, "uninstall-block", map[string]any{"name": "Fedora Media Writer", "version": "5.2.8", "reason": "Quiet string still prompts"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "5.2.8", r.Body["rule"].(map[string]any)["version"])
	require.Equal(t, true, f.auditRow(t, operator, "Fedora Media Writer", "5.2.8")["uninstall_blocked"])
	require.Equal(t, false, f.auditRow(t, operator, "Fedora Media Writer", "5.0")["uninstall_blocked"])
	_, err := svc.CheckUninstall(ctx, "fedora media writer", "5.2.8")
	require.True(t, cairn.IsCode(err, software.ECodeUninstallBlocked), "%v", err)
	require.Contains(t, err.Error(), "Quiet string still prompts")
	_, err = svc.CheckUninstall(ctx, "Fedora Media Writer", "5.0")
	require.NoError(t, err)

	// Lifting a block is an administrator's call.
	r = post(operator, "uninstall-unblock", map[string]any{"name": "Fedora Media Writer", "version": "5.2.8"})
	require.Equal(t, 403, r.Status, r.Raw)
	r = post(admin, "uninstall-unblock", map[string]any{"name": "Fedora Media Writer", "version": "5.0"})
	require.Equal(t, 404, r.Status, "no block stops 5.0: %s", r.Raw)
	r = post(admin, "uninstall-unblock", map[string]any{"name": "Fedora Media Writer", "version": "5.2.8"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Len(t, r.Body["removed"], 1)
	require.Equal(t, false, f.auditRow(t, admin, "Fedora Media Writer", "5.2.8")["uninstall_blocked"])

	// An every-version block stops both rows.
	r = post(operator, "uninstall-block", map[string]any{"name": "Fedora Media Writer", "reason": "unsafe"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, true, f.auditRow(t, admin, "Fedora Media Writer", "5.0")["uninstall_blocked"])
	require.Equal(t, true, f.auditRow(t, admin, "Fedora Media Writer", "5.2.8")["uninstall_blocked"])

	// Uninstall overrides: administrators only, validated, rendered.
	valid := map[string]any{"name": "Fedora Media Writer", "version": "5.0",
		"executable": `C:\Program Files\Fedora Media Writer\uninstall.exe`, "arguments": "remove --confirm-command"}
	r = post(operator, "uninstall-override", valid)
	require.Equal(t, 403, r.Status, r.Raw)
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"executable": `uninstall.exe`}, "executable"},
		{map[string]any{"executable": `C:\tools\readme.txt`}, "executable"},
		{map[string]any{"executable": `C:\a "b".exe`}, "executable"},
		{map[string]any{"executable": `C:\x\u.exe`, "arguments": "/S\r\ncalc.exe"}, "arguments"},
		{map[string]any{}, "executable"},
	} {
		tc.body["name"] = "Fedora Media Writer"
		r := post(admin, "uninstall-override", tc.body)
		require.Equal(t, 400, r.Status, r.Raw)
		require.NotEmpty(t, r.field(tc.field), r.Raw)
	}
	r = post(admin, "uninstall-override", valid)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, `"C:\Program Files\Fedora Media Writer\uninstall.exe" remove --confirm-command`, r.Body["rule"].(map[string]any)["command"])
	r = post(admin, "uninstall-override", map[string]any{"name": "Fedora Media Writer", "executable": "msiexec.exe", "arguments": "/x {11111111-2222-3333-4444-555555555555} /qn"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, true, f.auditRow(t, admin, "Fedora Media Writer", "5.0")["uninstall_override"])
	require.Equal(t, true, f.auditRow(t, admin, "Fedora Media Writer", "5.2.8")["uninstall_override"])

	// With the block lifted, the version's own override wins over the every-version one.
	r = post(admin, "uninstall-unblock", map[string]any{"name": "Fedora Media Writer"})
	require.Equal(t, 200, r.Status, r.Raw)
	plan, err := svc.CheckUninstall(ctx, "Fedora Media Writer", "5.0")
	require.NoError(t, err)
	require.Equal(t, `"C:\Program Files\Fedora Media Writer\uninstall.exe" remove --confirm-command`, plan.Command)
	plan, err = svc.CheckUninstall(ctx, "Fedora Media Writer", "5.2.8")
	require.NoError(t, err)
	require.Equal(t, "msiexec.exe /x {11111111-2222-3333-4444-555555555555} /qn", plan.Command)

	r = post(admin, "uninstall-override", map[string]any{"name": "Fedora Media Writer", "version": "5.0", "remove": true})
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "GET", "/api/software/rules", operator, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Len(t, r.Body["uninstall_overrides"], 1)
	require.Len(t, r.Body["uninstall_blocks"], 0)

	// Every change is in the audit trail, naming the software.
	r = f.do(t, "GET", "/api/server/audit?limit=100", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Contains(t, r.Raw, `hostname=un-a software=\"Fedora Media Writer\" version=\"5.2.8\"`)
}

func TestSoftwareAgentOverridesAndRefresh(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "agov")
	o := f.opsAgent(t, admin, site, "override-host")
	f.postSoftware(t, devicetrust.Identity{GUID: cairn.DeviceGUID(o.guid), SiteID: cairn.SiteID(site)}, swRow("Contoso Agent", "1.0"))

	r := o.device(t, "GET", "/api/agent/software-management/overrides", nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Empty(t, r.Body["icon_overrides"])
	before := r.Body["revision"]

	r = f.do(t, "POST", "/api/device/software/override-host/icon-override", admin,
		map[string]any{"name": "Contoso Agent", "display_icon": `C:\Program Files\Contoso Agent\agent.exe,0`})
	require.Equal(t, 200, r.Status, r.Raw)
	refresh := r.Body["refresh"].(map[string]any)
	require.Equal(t, true, refresh["requested"], r.Raw)
	require.NotEmpty(t, refresh["operation_id"])
	require.Eventually(t, func() bool { return o.count(proto.EventSoftwareRefresh) >= 1 }, 60*time.Second, 50*time.Millisecond)

	r = o.device(t, "GET", "/api/agent/software-management/overrides", nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.NotEqual(t, before, r.Body["revision"])
	rules := r.Body["icon_overrides"].([]any)
	require.Len(t, rules, 1)
	rule := rules[0].(map[string]any)
	require.Equal(t, "contoso agent", rule["name_key"])
	require.Equal(t, `C:\Program Files\Contoso Agent\agent.exe,0`, rule["display_icon"])
	require.Nil(t, rule["icon_hash"])
}
