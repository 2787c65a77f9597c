package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"image/color"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/inventory"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

func agentIcon(data []byte, ct string) proto.SoftwareIcon {
	sum := sha256.Sum256(data)
	return proto.SoftwareIcon{Hash: hex.EncodeToString(sum[:]), ContentType: ct, Data: data}
}

// Software icons from agents (issue 27 item 7): icons sent with the
// software rows are stored and served; a row keeps only an icon the
// Engine can serve. The icon overrides the Engine serves are fetched by
// the agent's own code and applied over what it found, and the device's
// software then shows the override's icon (or none).
func TestAgentSoftwareIcons(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "swicons")
	a := f.scriptAgent(t, admin, site, "swicons-01")
	id := devicetrust.Identity{GUID: cairn.DeviceGUID(a.guid), SiteID: cairn.SiteID(site)}

	green := agentIcon(pngIcon(t, 32, color.RGBA{G: 200, A: 255}), proto.IconPNG)
	svg := agentIcon([]byte(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 8 8"><circle cx="4" cy="4" r="3"/></svg>`), proto.IconSVG)
	evil := agentIcon([]byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), proto.IconSVG)
	forged := green
	forged.Hash = hex.EncodeToString(make([]byte, 32))
	found := map[string]proto.SoftwareIcon{"gimp": green, "inkscape": svg, "evil-app": evil, "forged": forged}
	rows := func() []proto.Software {
		return []proto.Software{{Name: "gimp", Version: "2.10", Source: "dpkg"}, {Name: "inkscape", Version: "1.2", Source: "dpkg"},
			{Name: "evil-app", Version: "1", Source: "dpkg"}, {Name: "forged", Version: "1", Source: "dpkg"}, {Name: "coreutils", Version: "9.1", Source: "dpkg"}}
	}
	post := func(ov proto.SoftwareOverrides) {
		t.Helper()
		sw := rows()
		icons := inventory.ApplyIcons(sw, found, ov, nil)
		_, err := f.engine.devices.Details(t.Context(), id, proto.Details{Inventory: proto.Inventory{Software: sw, SoftwareIcons: icons}})
		require.NoError(t, err)
	}
	shown := func() map[string]any {
		t.Helper()
		r := f.do(t, "GET", "/api/device/details/swicons-01", admin, nil)
		require.Equal(t, 200, r.Status, r.Raw)
		out := map[string]any{}
		for _, x := range r.Body["software"].([]any) {
			m := x.(map[string]any)
			out[m["name"].(string)] = m["icon_hash"]
		}
		return out
	}
	icon := func(hash string) (int, string, []byte) {
		t.Helper()
		req, err := http.NewRequest("GET", f.url+"/api/device/software/icon/"+hash, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+admin)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, res.Header.Get("Content-Type"), b
	}

	// What the agent found: stored, served, shown; a script-carrying SVG
	// and bytes that do not hash to their name are dropped with their
	// rows' icons.
	post(proto.SoftwareOverrides{})
	got := shown()
	require.Equal(t, green.Hash, got["gimp"])
	require.Equal(t, svg.Hash, got["inkscape"])
	require.Nil(t, got["evil-app"])
	require.Nil(t, got["forged"])
	require.Nil(t, got["coreutils"])
	status, ct, body := icon(green.Hash)
	require.Equal(t, 200, status)
	require.Equal(t, "image/png", ct)
	require.Equal(t, green.Data, body)
	status, _, _ = icon(evil.Hash)
	require.Equal(t, 404, status)

	// An operator overrides gimp's icon with an upload and clears
	// inkscape's; the agent fetches the overrides the Engine serves
	// (GET /api/agent/software-management/overrides, Device auth) with
	// its own cache and applies them.
	red := pngIcon(t, 16, color.RGBA{R: 255, A: 255})
	r := f.do(t, "POST", "/api/device/software/swicons-01/icon-override", admin, map[string]any{"name": "gimp", "icon": red})
	require.Equal(t, 200, r.Status, r.Raw)
	redHash := r.Body["rule"].(map[string]any)["icon_hash"].(string)
	r = f.do(t, "POST", "/api/device/software/swicons-01/icon-override", admin, map[string]any{"name": "inkscape", "clear_icon": true})
	require.Equal(t, 200, r.Status, r.Raw)

	overrides := &inventory.Overrides{}
	overrides.Session(a)
	ov, err := overrides.Get(t.Context())
	require.NoError(t, err)
	require.Len(t, ov.IconOverrides, 2)
	post(ov)
	got = shown()
	require.Equal(t, redHash, got["gimp"], "the override's icon, which the agent names without its bytes")
	require.Nil(t, got["inkscape"], "cleared")
	status, _, body = icon(redHash)
	require.Equal(t, 200, status)
	require.Equal(t, red, body)

	// Removing the override brings back what the agent found, once it
	// fetches again.
	r = f.do(t, "POST", "/api/device/software/swicons-01/icon-override", admin, map[string]any{"name": "gimp", "remove": true})
	require.Equal(t, 200, r.Status, r.Raw)
	overrides.Invalidate()
	ov, err = overrides.Get(t.Context())
	require.NoError(t, err)
	require.Len(t, ov.IconOverrides, 1)
	post(ov)
	require.Equal(t, green.Hash, shown()["gimp"])
}
